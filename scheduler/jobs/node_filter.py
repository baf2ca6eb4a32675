"""Which nodes a job's own options allow: ``--constraint``, ``-w/--nodelist``, ``-x/--exclude``.

A constraint is Slurm's feature expression without counts or brackets: features joined by
``&`` or ``,`` must all be present, alternatives joined by ``|`` are tried in turn (``a&b|c``
is ``(a and b) or c``). ``-w`` names nodes the job must run on (a hostlist expression, e.g.
``gpu[1-2]``): the job may use only those nodes and, as in Slurm, asks for at least that many
nodes. ``-x`` names nodes it must not use. All pure: names and features in, a verdict out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from scheduler.topology.host_set import HostSet
from scheduler.topology.hostlist import expand

if TYPE_CHECKING:
    from scheduler.records import JobSpec
    from scheduler.shard.index import NodeIndex
    from scheduler.shard.state import ShardState

__all__ = ["NodeFilter", "NodeFilterError", "allowed_slots", "node_filter", "required_nodes"]

_FEATURE = re.compile(r"[A-Za-z0-9_.:+-]+")


class NodeFilterError(ValueError):
    """A constraint or node list that does not parse."""


@dataclass(frozen=True, slots=True)
class NodeFilter:
    """A job's node restrictions: feature alternatives, required and excluded names."""

    any_of: tuple[frozenset[str], ...] = ()  # each: features all of which a node must have
    only: frozenset[str] | None = None  # -w: the nodes allowed (None: any)
    excluded: HostSet | frozenset[str] = frozenset()  # -x: never expanded when large

    @property
    def restricts(self) -> bool:
        """True when the filter rules out any node at all."""
        return bool(self.any_of or self.only is not None or self.excluded)

    def allows(self, name: str, features: Iterable[str]) -> bool:
        """True when the node ``name`` with ``features`` may host the job."""
        if self.only is not None and name not in self.only:
            return False
        if name in self.excluded:
            return False
        if not self.any_of:
            return True
        have = set(features)
        return any(wanted <= have for wanted in self.any_of)

    def mask(self, names: Sequence[str], features: Sequence[Iterable[str]]) -> np.ndarray:
        """Per node slot (``names[i]`` with ``features[i]``): may it host the job."""
        return np.array([self.allows(n, f) for n, f in zip(names, features, strict=True)],
                        dtype=np.bool_)


MAX_REQUIRED = 16_384
"""The most nodes ``-w`` may name: the job asks for every one of them (and they must be nodes
of its partition), so a longer list can never run; refused before it is expanded, as a list of
a million names held ~100 MB of the shard's memory in this cache (red team, 2026-12-07)."""


@functools.lru_cache(maxsize=256)
def node_filter(constraint: str, nodelist: str, exclude: str) -> NodeFilter:
    """The parsed restrictions; raises :class:`NodeFilterError` naming what is wrong."""
    return NodeFilter(_constraint(constraint), _names(nodelist, "-w") if nodelist else None,
                      _excluded(exclude) if exclude else frozenset())


def allowed_slots(state: ShardState, index: NodeIndex, spec: JobSpec) -> np.ndarray:
    """Per slot of the node index: may the job's options use that node (none, when they do
    not parse: admission refuses such a spec, so only an old job could carry one)."""
    try:
        wanted = node_filter(spec.constraint, spec.nodelist, spec.exclude)
    except NodeFilterError:
        return np.zeros(len(index.names), dtype=np.bool_)
    nodes = state.nodes
    features = [nodes[s].features if s in nodes else () for s in index.sluids]
    return wanted.mask(index.names, features)


def required_nodes(nodelist: str) -> int:
    """How many nodes ``-w`` names (0 without one; the node count is at least this)."""
    return len(_names(nodelist, "-w")) if nodelist else 0


def _constraint(text: str) -> tuple[frozenset[str], ...]:
    if not text.strip():
        return ()
    alternatives = []
    for alternative in text.split("|"):
        features = [f.strip() for f in re.split(r"[&,]", alternative)]
        for feature in features:
            if not _FEATURE.fullmatch(feature):
                raise NodeFilterError(
                    f"constraint {text!r}: {feature!r} is not a feature name (use a&b, a,b or "
                    "a|b; counts and brackets are not supported)"
                )
        alternatives.append(frozenset(features))
    return tuple(alternatives)


def _names(text: str, option: str) -> frozenset[str]:
    try:
        listed = HostSet.parse(text).count
        if listed > MAX_REQUIRED:
            raise NodeFilterError(f"{option} {text[:80]!r}: names {listed} nodes, more than "
                                  f"{MAX_REQUIRED}")
        names = expand(text)
    except NodeFilterError:
        raise
    except ValueError as error:
        raise NodeFilterError(f"{option} {text[:80]!r}: {error}") from None
    if not names or not all(names):
        raise NodeFilterError(f"{option} {text!r}: names no node")
    return frozenset(names)


def _excluded(text: str) -> HostSet:
    """``-x``: any number of names, nodes of the cluster or not (as a pattern when many)."""
    try:
        names = HostSet.parse(text)
    except ValueError as error:
        raise NodeFilterError(f"-x {text[:80]!r}: {error}") from None
    if not names:
        raise NodeFilterError(f"-x {text!r}: names no node")
    return names
