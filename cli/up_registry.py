"""``sluice up --registry [PORT]``: a local schema registry beside the system, schemas published.

The registry (Apicurio, :mod:`infra.registry`) runs from ``$SLUICE_HOME/registry`` on
127.0.0.1:PORT; every record type is registered (``sluice schemas register``) and the URL is
recorded in ``system.json``, so the worker's intake and later commands find it. ``sluice down``
stops it.
"""

from __future__ import annotations

from streams.settings import Settings

__all__ = ["start_registry", "stop_registry"]


def start_registry(settings: Settings, port: int) -> str:
    """Start (or find) the registry, register every schema; its URL. Raises ``RuntimeError``."""
    from infra.registry import LocalRegistry
    from streams.schema_registry import SchemaRegistry

    registry = LocalRegistry.start(settings.home / "registry", port)
    SchemaRegistry(registry.url, timeout_s=30).register_all()
    return registry.url


def stop_registry(settings: Settings) -> bool:
    """Stop the registry ``sluice up`` started; whether one was running."""
    from infra.registry import LocalRegistry

    found = LocalRegistry.running(settings.home / "registry")
    if found is None:
        return False
    found.stop()
    return True
