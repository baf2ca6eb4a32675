"""topology/ring records (Slurm 26.05 ``ring_record.c``): rings of at most 16 nodes, in
position order. A window of consecutive positions may wrap past the end of the ring."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.common.nodes import NodeTable
from scheduler.topology.config.model import NamedTopology, RingConfig

__all__ = ["RingIndex", "build_ring_index"]


@dataclass(frozen=True, slots=True, eq=False)
class RingIndex:
    """Rings over the cluster's nodes.

    ``positions[r, p]`` is the node at position ``p % size[r]`` of ring ``r`` for ``p`` up
    to twice the largest ring (so a wrapping window is a plain slice); -1 pads empty rows.
    ``node_ring[i]`` is node ``i``'s ring or -1.
    """

    name: str
    nodes: NodeTable
    ring_names: tuple[str, ...]
    positions: NDArray[np.intp]
    size: NDArray[np.int64]
    node_ring: NDArray[np.int32]
    kind: ClassVar[str] = "ring"

    @property
    def ring_count(self) -> int:
        """Number of rings."""
        return len(self.ring_names)

    @property
    def covered(self) -> NDArray[np.bool_]:
        """Nodes in some ring."""
        return self.node_ring >= 0


def build_ring_index(config: NamedTopology, node_names: Sequence[str]) -> RingIndex:
    """Pure. Ring nodes absent from ``node_names`` are dropped from their ring (Slurm warns)."""
    rings = config.config
    if not isinstance(rings, RingConfig):
        raise TypeError(f"topology {config.name!r} is {config.kind}, not ring")
    table = NodeTable.of(node_names)
    members = [
        [table.position[n] for n in ring.nodes if n in table.position] for ring in rings.rings
    ]
    widest = max((len(m) for m in members), default=0)
    positions = np.full((len(members), max(2 * widest, 1)), -1, dtype=np.intp)
    node_ring = np.full(table.size, -1, dtype=np.int32)
    for r, ring in enumerate(members):
        if ring:
            positions[r, : 2 * widest] = [ring[p % len(ring)] for p in range(2 * widest)]
            node_ring[ring] = r
    size = np.asarray([len(m) for m in members], dtype=np.int64)
    return RingIndex(
        config.name, table, tuple(r.name for r in rings.rings), positions, size, node_ring
    )
