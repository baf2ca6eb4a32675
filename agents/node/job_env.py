"""The job's own environment on a node: its plain ``env`` and its sealed ``--export`` values.

Sealed values are opened with the nodes' environment key (``agents.auth.sealed_env``), loaded
when a launch first carries some, by libsodium (an SLX1 blob of an older client, or a node
without libsodium, loads ``cryptography``).
"""

from __future__ import annotations

from typing import Any

from agents.auth.key_files import KeyFileError
from streams.settings import Settings

__all__ = ["open_job_env"]


def open_job_env(settings: Settings, launch: dict[str, Any]) -> dict[str, str]:
    """The job's environment from its launch (ValueError when the sealed values do not open:
    the launch is refused)."""
    env = dict(launch.get("env") or {})
    sealed = str(launch.get("sealed_env") or "")
    if sealed:
        from agents.auth.daemon_keys import load_env_private_key  # noqa: PLC0415 - when first needed
        from agents.auth.sealed_env import open_env  # noqa: PLC0415 - when first needed

        try:
            key = load_env_private_key(settings)
        except KeyFileError as exc:
            raise ValueError(str(exc)) from exc
        env.update(open_env(sealed, key, settings.cluster, str(launch.get("user"))))
    return env
