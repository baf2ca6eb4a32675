"""Checks every topology kind shares, applied to the parsed records.

Sluice is stricter than Slurm where Slurm only warns: a node in two blocks, rings or leaf
switches, an unknown node (when the caller passes the cluster's node names), a switch with
both nodes and children, or a switch with two parents is an error, because a scheduler that
silently picks one reading of an ambiguous file is hard to audit.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from scheduler.topology.errors import TopologyConfigError

__all__ = ["owned_nodes", "unique_names"]


def unique_names(items: Iterable[tuple[str, int]], what: str, filename: str) -> None:
    seen: set[str] = set()
    for name, line in items:
        if name in seen:
            raise TopologyConfigError(filename, line, f"{what} {name!r} is defined twice")
        seen.add(name)


def owned_nodes(
    units: Iterable[tuple[str, tuple[str, ...], int]],
    what: str,
    filename: str,
    known: Collection[str] | None,
) -> None:
    """Each node in at most one unit, and known to the cluster when ``known`` is given."""
    owner: dict[str, str] = {}
    for unit, nodes, line in units:
        for node in nodes:
            if known is not None and node not in known:
                raise TopologyConfigError(
                    filename, line, f"unknown node {node!r} in {what} {unit!r}"
                )
            if node in owner:
                where = (
                    "twice" if owner[node] == unit else f"in {what}s {owner[node]!r} and {unit!r}"
                )
                raise TopologyConfigError(filename, line, f"node {node!r} appears {where}")
            owner[node] = unit
