"""Block arithmetic for one request, the per-segment task, and candidate counts per base
block (with the Mode-3 power cap when the hierarchy is mapped onto this topology)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.block.record import BlockIndex, block_level_for
from scheduler.topology.common.budget import BudgetTracker
from scheduler.topology.common.types import BoolMask

__all__ = ["Geometry", "SegmentTask", "bblock_counts", "geometry"]


@dataclass(frozen=True, slots=True)
class Geometry:
    """Block sizes for a request of ``rem`` nodes (all sizes in base blocks).

    ``level`` is -1 when the job is larger than the largest enabled level (the block is
    then the whole topology); the llblock is the next lower enabled level, and a job may
    span at most ``max_llblock`` of them.
    """

    level: int
    per_block: int
    block_count: int
    ll_level: int
    per_llblock: int
    max_llblock: int

    @property
    def track_llblocks(self) -> bool:
        """Slurm tracks lower-level blocks only when they can actually constrain the job."""
        return self.per_block != self.per_llblock * self.max_llblock


def geometry(index: BlockIndex, rem: int) -> Geometry:
    """Slurm's block/llblock arithmetic for ``rem`` nodes."""
    level, ll_level = block_level_for(index, rem)
    nb = index.bblock_count
    per_block = nb if level < 0 else 1 << level
    block_count = 1 if level < 0 else math.ceil(nb / per_block)
    per_llblock = 1 << ll_level
    max_llblock = math.ceil(rem / (per_llblock * index.bblock_node_cnt))
    return Geometry(level, per_block, block_count, ll_level, per_llblock, max_llblock)


@dataclass(frozen=True, slots=True, eq=False)
class SegmentTask:
    """One segment's inputs.

    ``segments`` is the job's segment count (1 without ``--segment``). ``asblock`` =
    (blocks per consolidation block, job nodes) for the first segment of
    ``--consolidate-segments``. ``estimate`` = (segment size, spread) asks for Slurm's
    first-segment estimate of how many segments the blocks can hold. ``free`` marks nodes
    that are not in use, for the fragmentation-aware tie-break.
    """

    rem: int
    geometry: Geometry
    segments: int = 1
    required: BoolMask | None = None
    asblock: tuple[int, int] | None = None
    estimate: tuple[int, bool] | None = None
    free: BoolMask | None = None


def bblock_counts(
    index: BlockIndex, candidates: BoolMask, tracker: BudgetTracker | None
) -> NDArray[np.int64]:
    """Candidate nodes per base block, capped by a power budget mapped to this topology."""
    placed = candidates & (index.node_bblock >= 0)
    counts = np.bincount(index.node_bblock[placed], minlength=index.bblock_count).astype(np.int64)
    if tracker is not None and tracker.budget.topology == index.name:
        counts = np.minimum(counts, bblock_caps(index, tracker))
    return counts


def bblock_caps(index: BlockIndex, tracker: BudgetTracker) -> NDArray[np.int64]:
    """Per base block: its leaf's capacity // per-node amount (the leaf of its first node
    under the hierarchy, as Slurm does); 0 when no node of the block is under it."""
    node_leaf = tracker.budget.node_leaf
    caps = np.zeros(index.bblock_count, dtype=np.int64)
    for bblock, members in enumerate(index.bblock_nodes):
        leaves = node_leaf[members]
        leaves = leaves[leaves >= 0]
        caps[bblock] = tracker.node_cap(int(leaves[0])) if len(leaves) else 0
    return caps
