"""topology/block evaluation of one segment (Slurm's ``eval_nodes_block``, steps A-C).

A. Choose one block at the job's level (best fit): skip blocks whose best ``max_llblock``
   lower-level blocks cannot hold the job; among the rest take the lowest
   (lightest node weight, available nodes), ties to the later block.
B. Within it, add whole weight groups until the request is met; the lighter groups are
   mandatory.
C. Greedily add base blocks: stay inside lower-level blocks already used, prefer blocks
   that fit the remaining need with the fewest nodes, otherwise the largest; at most
   ``max_llblock`` lower-level blocks may be opened.

The module is pure: arrays in, arrays out. ``SegmentTask`` carries the per-segment inputs
and ``SegmentResult`` the chosen nodes plus the base blocks they used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.block.geometry import Geometry, SegmentTask, bblock_counts
from scheduler.topology.block.record import BlockIndex
from scheduler.topology.block.selection import StepC, choose_block
from scheduler.topology.common.budget import BudgetTracker
from scheduler.topology.common.evaluation import Action, Failed, split_by_weight, take_nodes
from scheduler.topology.common.types import BoolMask

__all__ = ["SegmentResult", "evaluate_segment"]

Indices = NDArray[np.intp]


@dataclass(frozen=True, slots=True, eq=False)
class SegmentResult:
    """Chosen nodes (take order), the base blocks used, and the block chosen in step A."""

    nodes: Indices
    used_bblocks: NDArray[np.bool_]
    block: int


def evaluate_segment(
    index: BlockIndex,
    task: SegmentTask,
    candidates: BoolMask,
    tracker: BudgetTracker | None,
    fragmentation_aware: bool,
) -> tuple[int, SegmentResult | Failed]:
    """Steps A to C for one segment of ``task.rem`` nodes over ``candidates``.

    Returns the block chosen in step A (-1 if none) with the result.
    """
    counts = bblock_counts(index, candidates, tracker)
    block = choose_block(index, task, candidates, counts, fragmentation_aware)
    if isinstance(block, Failed):
        return -1, block
    return block, _evaluate_in_block(index, task, candidates, block, tracker, fragmentation_aware)


def _evaluate_in_block(
    index: BlockIndex,
    task: SegmentTask,
    candidates: BoolMask,
    block: int,
    tracker: BudgetTracker | None,
    fragmentation_aware: bool,
) -> SegmentResult | Failed:
    """Required nodes, then steps B and C, inside the chosen block."""
    geo = task.geometry
    in_block = _block_mask(index, geo, block) & candidates
    used = np.zeros(index.bblock_count, dtype=bool)
    taken: list[Indices] = []
    rem = task.rem
    max_ll = geo.max_llblock
    if task.required is not None:
        required = np.flatnonzero(task.required)
        charged = take_nodes(required, len(required), tracker)
        if len(charged) < len(required):
            return Failed(
                "ESLURM_TOPO_REQ_NODES_NOT_AVAIL",
                Action.BREAK,
                "a required node is over the power budget",
            )
        taken.append(required)
        rem -= len(required)
        if geo.track_llblocks:
            max_ll = _mark_used(index, geo, required, used, max_ll)
        if max_ll < 0:
            return Failed.permanent(
                "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE",
                "the required nodes span more lower-level blocks than allowed",
            )
        if rem <= 0:
            return SegmentResult(required, used, block)
        in_block &= ~task.required
    return _fill(
        index, task, in_block, (used, taken, rem, max_ll), tracker, block, fragmentation_aware
    )


def _fill(
    index: BlockIndex,
    task: SegmentTask,
    in_block: BoolMask,
    state: tuple[NDArray[np.bool_], list[Indices], int, int],
    tracker: BudgetTracker | None,
    block: int,
    fragmentation_aware: bool,
) -> SegmentResult | Failed:
    """Steps B and C: weight groups, then base blocks already used, then new base blocks."""
    used, taken, rem, max_ll = state
    geo = task.geometry
    split = split_by_weight(
        index.nodes.weights, np.flatnonzero(in_block), rem, index.nodes.uniform_weights
    )
    if split is None:
        return Failed(
            "ESLURM_TOPO_INSUFFICIENT_RESOURCES",
            Action.RETRY_DEFAULT,
            "not enough nodes in the chosen block",
        )
    best, mandatory = split
    if len(mandatory):
        charged = take_nodes(mandatory, len(mandatory), tracker)
        taken.append(charged)
        rem -= len(charged)
        max_ll = _mark_used(index, geo, charged, used, max_ll)
        if rem <= 0:
            return SegmentResult(np.concatenate(taken), used, block)
        if max_ll < 0:
            return Failed(
                "ESLURM_TOPO_WEIGHT_NO_FIT",
                Action.RETRY_DEFAULT,
                "node weights force more lower-level blocks than allowed",
            )
    usable = np.zeros_like(in_block)
    usable[best] = True
    for chunk in taken:
        usable[chunk] = False
    rem = _take_from_used(index, used, usable, rem, taken, tracker)
    if rem <= 0:
        return SegmentResult(np.concatenate(taken), used, block)
    step = StepC(
        index, geo, block, used, max_ll, tracker, task.free if fragmentation_aware else None
    )
    rem = step.run(usable, rem, taken)
    nodes = np.concatenate(taken) if taken else np.zeros(0, dtype=np.intp)
    if rem <= 0:
        return SegmentResult(nodes, step.used, block)
    hint = np.zeros_like(in_block)
    hint[nodes] = True
    return Failed(
        "ESLURM_TOPO_INSUFFICIENT_RESOURCES",
        Action.RETRY_HINT,
        f"{task.rem - rem} of {task.rem} nodes found in the chosen block",
        hint,
    )


def _take_from_used(
    index: BlockIndex,
    used: NDArray[np.bool_],
    usable: BoolMask,
    rem: int,
    taken: list[Indices],
    tracker: BudgetTracker | None,
) -> int:
    """Fill the base blocks already in use first, block by block in node order."""
    if not used.any():
        return rem
    order = [m[usable[m]] for m in (index.bblock_nodes[b] for b in np.flatnonzero(used))]
    extra = take_nodes(np.concatenate(order).astype(np.intp), rem, tracker)
    taken.append(extra)
    usable[extra] = False
    return rem - len(extra)


def _block_mask(index: BlockIndex, geo: Geometry, block: int) -> BoolMask:
    bblock = index.node_bblock
    return np.asarray((bblock >= 0) & (bblock // geo.per_block == block), dtype=bool)


def _mark_used(
    index: BlockIndex, geo: Geometry, nodes: Indices, used: NDArray[np.bool_], max_ll: int
) -> int:
    """Mark the base blocks of ``nodes`` used; each newly opened llblock costs one."""
    touched = np.zeros(index.bblock_count, dtype=bool)
    touched[index.node_bblock[nodes]] = True
    last = -1
    for bblock in np.flatnonzero(touched | used):
        b = int(bblock)
        if used[b]:
            last = b
            continue
        used[b] = True
        if (last >> geo.ll_level) != (b >> geo.ll_level):
            max_ll -= 1
            last = b
    return max_ll
