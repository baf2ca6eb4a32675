"""resources.yaml errors (see :mod:`scheduler.topology.errors` for the tree)."""

from __future__ import annotations

from scheduler.topology.errors import ConfigError

__all__ = ["ResourcesConfigError"]


class ResourcesConfigError(ConfigError):
    """resources.yaml is invalid: file name, line number, reason."""
