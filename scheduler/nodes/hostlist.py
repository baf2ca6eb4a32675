"""Slurm hostlist expressions for the cluster configuration (``gpu[001-064]``, ``a[1-2]b[1-2]``).

One implementation serves the whole core: this module re-exports the topology package's
(``scheduler.topology.hostlist``) under the names the configuration reader uses.
"""

from __future__ import annotations

from scheduler.topology.hostlist import HostlistError, expand

__all__ = ["HostlistError", "expand_hostlist"]


def expand_hostlist(text: str) -> tuple[str, ...]:
    """Every host name of ``text``, in order; raises :class:`HostlistError` when malformed."""
    return tuple(expand(text))
