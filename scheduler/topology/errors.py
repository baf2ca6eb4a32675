"""Configuration errors of the topology and resources files.

Exception tree (errors are only for files that do not parse; a job that does not fit is an
:class:`~scheduler.topology.common.types.Unplaceable` value, never an exception)::

    ValueError
    └── ConfigError                 file name, line number, reason
        ├── TopologyConfigError     topology.yaml / topology.conf
        └── (scheduler.resources) ResourcesConfigError   resources.yaml

The caller keeps its running configuration when a parse raises.
"""

from __future__ import annotations

__all__ = ["ConfigError", "TopologyConfigError"]


class ConfigError(ValueError):
    """A configuration file is invalid: says which file, which line (1-based) and why."""

    def __init__(self, filename: str, line: int, reason: str) -> None:
        self.filename = filename
        self.line = line
        self.reason = reason
        super().__init__(f"{filename}:{line}: {reason}")


class TopologyConfigError(ConfigError):
    """topology.yaml or topology.conf is invalid."""
