"""topology/tree records (Slurm's ``switch_record.c``): switches in file order, their levels
(leaf = 0, a parent is 1 + its highest child), parents, the nodes under each switch, and
the hop-count matrix between switches (parent-child = 1, ``INFINITE`` when disjoint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.common.nodes import NodeTable
from scheduler.topology.config.model import NamedTopology, TreeConfig

__all__ = ["INFINITE_HOPS", "TreeIndex", "build_tree_index"]

INFINITE_HOPS: Final = 1 << 40
"""Distance between switches with no common ancestor."""


@dataclass(frozen=True, slots=True, eq=False)
class TreeIndex:
    """An immutable switch tree over the cluster's nodes.

    ``node_leaf[i]``: node ``i``'s leaf switch (-1: under none, never placed on).
    ``switch_nodes[s]``: nodes under switch ``s`` (node order). ``parent[s]``: -1 for a root.
    ``bottom_up``: switch ids by ascending level (children before parents).
    """

    name: str
    nodes: NodeTable
    switch_names: tuple[str, ...]
    level: NDArray[np.int32]
    parent: NDArray[np.int32]
    switch_nodes: tuple[NDArray[np.intp], ...]
    node_leaf: NDArray[np.int32]
    distance: NDArray[np.int64]
    bottom_up: tuple[int, ...]
    kind: ClassVar[str] = "tree"

    @property
    def switch_count(self) -> int:
        """Number of switches."""
        return len(self.switch_names)

    @property
    def covered(self) -> NDArray[np.bool_]:
        """Nodes under some leaf switch."""
        return self.node_leaf >= 0

    def is_leaf(self, switch: int) -> bool:
        """Level-0 switch."""
        return bool(self.level[switch] == 0)


def build_tree_index(config: NamedTopology, node_names: Sequence[str]) -> TreeIndex:
    """Pure. Nodes absent from ``node_names`` are left out (Slurm warns about them)."""
    tree = config.config
    if not isinstance(tree, TreeConfig):
        raise TypeError(f"topology {config.name!r} is {config.kind}, not tree")
    table = NodeTable.of(node_names)
    number = {s.name: i for i, s in enumerate(tree.switches)}
    count = len(tree.switches)
    parent = np.full(count, -1, dtype=np.int32)
    for i, switch in enumerate(tree.switches):
        for child in switch.children:
            parent[number[child]] = i
    level = _levels(tree, number)
    node_leaf = np.full(table.size, -1, dtype=np.int32)
    members: list[list[int]] = [[] for _ in range(count)]
    for i, switch in enumerate(tree.switches):
        if not switch.children:
            positions = [table.position[n] for n in switch.nodes if n in table.position]
            node_leaf[positions] = i
            members[i] = positions
    bottom_up = tuple(sorted(range(count), key=lambda s: (int(level[s]), s)))
    for s in bottom_up:
        if parent[s] >= 0:
            members[int(parent[s])].extend(members[s])
    switch_nodes = tuple(np.asarray(sorted(m), dtype=np.intp) for m in members)
    return TreeIndex(
        config.name,
        table,
        tuple(s.name for s in tree.switches),
        level,
        parent,
        switch_nodes,
        node_leaf,
        _distances(parent),
        bottom_up,
    )


def _levels(tree: TreeConfig, number: dict[str, int]) -> NDArray[np.int32]:
    level = np.zeros(len(tree.switches), dtype=np.int32)
    resolved = [not s.children for s in tree.switches]
    while not all(resolved):
        for i, switch in enumerate(tree.switches):
            if resolved[i] or not all(resolved[number[c]] for c in switch.children):
                continue
            level[i] = 1 + max(int(level[number[c]]) for c in switch.children)
            resolved[i] = True
    return level


def _distances(parent: NDArray[np.int32]) -> NDArray[np.int64]:
    """Hop counts between switches (Floyd-Warshall over parent-child edges)."""
    count = len(parent)
    dist = np.full((count, count), INFINITE_HOPS, dtype=np.int64)
    np.fill_diagonal(dist, 0)
    for child, up in enumerate(parent):
        if up >= 0:
            dist[child, up] = dist[up, child] = 1
    for k in range(count):
        dist = np.minimum(dist, dist[:, k : k + 1] + dist[k : k + 1, :])
    dist[dist >= INFINITE_HOPS] = INFINITE_HOPS
    return dist
