"""One whole-job evaluation for topology/block: the segment loop (Slurm §1.5).

``--segment=S`` splits a job of N nodes into N/S segments, each placed by its own
evaluation inside one block sized for S. ``--spread-segments`` removes every base block a
segment touched from the later segments' candidates; ``--consolidate-segments`` keeps all
segments inside the one higher-level block (the asblock) the first segment chose, and a
later failure retries the whole job without that asblock.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.block.evaluate import evaluate_segment
from scheduler.topology.block.geometry import Geometry, SegmentTask, bblock_counts, geometry
from scheduler.topology.block.record import BlockIndex, block_level_for
from scheduler.topology.block.selection import spread_capacity
from scheduler.topology.common.budget import BudgetTracker, LayeredBudget
from scheduler.topology.common.evaluation import Action, Chosen, Failed
from scheduler.topology.common.types import BoolMask, PlacementRequest
from scheduler.topology.hostlist import HostlistError, compress

__all__ = ["JobShape", "evaluate_job", "job_shape"]

Indices = NDArray[np.intp]


class JobShape:
    """Segment size and count for ``nodes`` job nodes, or why they are invalid."""

    def __init__(self, nodes: int, size: int, count: int) -> None:
        self.nodes, self.size, self.count = nodes, size, count


def job_shape(request: PlacementRequest, nodes: int) -> JobShape | Failed:
    """A segment larger than the job is ignored; otherwise it must divide the job."""
    segment = request.segment
    if segment is None or segment > nodes:
        return JobShape(nodes, nodes, 1)
    if nodes % segment:
        return Failed.permanent(
            "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE",
            f"{nodes} nodes cannot be split into segments of {segment}",
        )
    return JobShape(nodes, segment, nodes // segment)


def _asblock(index: BlockIndex, geo: Geometry, shape: JobShape, spread: bool) -> int:
    """Blocks per consolidation block (Slurm's ``block_per_asblock``)."""
    if spread:
        bnc = index.bblock_node_cnt
        level, _ = block_level_for(index, math.ceil(shape.size / bnc) * bnc * shape.count)
    else:
        level, _ = block_level_for(index, shape.nodes)
    return index.bblock_count if level < 0 else 1 << (level - geo.level)


def _check_required(
    index: BlockIndex, required: BoolMask, candidates: BoolMask, shape: JobShape, max_nodes: int
) -> Failed | None:
    if (required & ~candidates).any():
        return Failed(
            "ESLURM_TOPO_REQ_NODES_NOT_AVAIL",
            Action.BREAK,
            "a required node is not available now",
            reason="ReqNodeNotAvail",
        )
    if (index.node_bblock[required] < 0).any():
        return Failed.permanent(
            "ESLURM_TOPO_REQ_NODES_NO_MATCH_TOPO", "a required node is in no block"
        )
    count = int(required.sum())
    if count > max_nodes:
        return Failed.permanent("ESLURM_TOPO_MAX_NODE_LIMIT", "more required nodes than job nodes")
    if shape.count > 1 and shape.nodes > count:
        return Failed.permanent(
            "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE",
            "with --segment, -w must list at least the job's node count",
        )
    return None


def group_name(index: BlockIndex, nodes: Indices) -> str:
    """The base blocks holding ``nodes``, as a host list of block names (``b[3-4]``)."""
    names = [index.bblock_names[int(b)] for b in np.unique(index.node_bblock[nodes])]
    try:
        return compress(names, sort=False)
    except HostlistError:
        return ",".join(names)


def evaluate_job(
    index: BlockIndex,
    request: PlacementRequest,
    shape: JobShape,
    candidates: BoolMask,
    required: BoolMask | None,
    budget: LayeredBudget | None,
    free: BoolMask | None,
) -> Chosen | Failed:
    """Place every segment, or fail with the action the retry loop should take."""
    geo = geometry(index, shape.size)
    tracker = budget.tracker() if budget is not None else None
    if required is not None:
        problem = _check_required(index, required, candidates, shape, request.max_nodes)
        if problem is not None:
            return problem
        if shape.count > 1:
            candidates, required = candidates & required, None
    per_as = None
    if shape.count > 1 and request.consolidate_segments:
        per_as = _asblock(index, geo, shape, request.spread_segments)
    spread = request.spread_segments and shape.count > 1
    if (
        spread
        and spread_capacity(index, geo, bblock_counts(index, candidates, tracker), shape.size)
        < shape.count
    ):
        return Failed(
            "ESLURM_TOPO_SEGMENT_NO_FIT",
            Action.BREAK,
            f"the base blocks cannot hold {shape.count} spread segments",
        )
    return _segment_loop(index, request, shape, geo, (candidates, required, free), per_as, tracker)


def _segment_loop(
    index: BlockIndex,
    request: PlacementRequest,
    shape: JobShape,
    geo: Geometry,
    masks: tuple[BoolMask, BoolMask | None, BoolMask | None],
    per_as: int | None,
    tracker: BudgetTracker | None,
) -> Chosen | Failed:
    """One evaluation per segment; spread and consolidate narrow the later candidates."""
    candidates, required, free = masks
    spread = request.spread_segments and shape.count > 1
    orig = candidates.copy()
    allocated = np.zeros_like(candidates)
    groups: list[tuple[str, Indices]] = []
    asblock_nodes: BoolMask | None = None
    for number in range(shape.count):
        current = orig & ~allocated
        if not current.any():
            if allocated.any():
                return Failed(
                    "ESLURM_TOPO_SEGMENT_NO_FIT",
                    Action.RETRY_HINT,
                    "no nodes left for the next segment",
                    allocated,
                )
            return Failed("ESLURM_TOPO_EMPTY_NODE_MAP", Action.BREAK, "no eligible nodes")
        first = number == 0
        task = SegmentTask(
            shape.size,
            geo,
            shape.count,
            required=required,
            asblock=(per_as, shape.nodes) if per_as is not None and first else None,
            estimate=(shape.size, spread) if shape.count > 1 and first else None,
            free=free,
        )
        block, result = evaluate_segment(index, task, current, tracker, request.fragmentation_aware)
        if per_as is not None and first and block >= 0:
            asblock_nodes = _asblock_nodes(index, geo, block // per_as, per_as)
            orig &= asblock_nodes
        if isinstance(result, Failed):
            return _segment_failure(result, allocated, asblock_nodes, number)
        allocated[result.nodes] = True
        groups.append((group_name(index, result.nodes), np.sort(result.nodes)))
        if spread:
            orig &= ~result.used_bblocks[np.maximum(index.node_bblock, 0)] | (index.node_bblock < 0)
    return Chosen(tuple(groups))


def _asblock_nodes(index: BlockIndex, geo: Geometry, asblock: int, per_as: int) -> BoolMask:
    bblock = index.node_bblock
    return np.asarray((bblock >= 0) & ((bblock // geo.per_block) // per_as == asblock), dtype=bool)


def _segment_failure(
    result: Failed, allocated: BoolMask, asblock_nodes: BoolMask | None, number: int
) -> Failed:
    """A consolidated job retries without its asblock; otherwise keep the hint."""
    if asblock_nodes is not None:
        return Failed(
            "ESLURM_TOPO_SEGMENT_NO_FIT",
            Action.RETRY,
            f"segment {number} does not fit in the consolidation block",
            asblock_nodes,
        )
    if result.action is Action.RETRY_HINT and allocated.any():
        hint = allocated | (result.hint if result.hint is not None else False)
        return Failed(
            "ESLURM_TOPO_SEGMENT_NO_FIT" if number else result.code,
            result.action,
            result.detail,
            hint,
            result.reason,
            result.retryable,
        )
    return result
