"""The two choices of the block evaluator, vectorised over blocks with numpy.

- :func:`choose_block` (step A): one block at the job's level.
- :class:`StepC`: the greedy base-block loop, one :func:`pick_bblock` per round.

Slurm scans candidates in order and replaces its "best" under a comparator; both
comparators here are total preorders, so the scan equals taking the lexicographic maximum
of a key with the later index winning ties, which numpy computes in one ``lexsort``.
The optional fragmentation-aware key (Sluice, off by default) only breaks Slurm's ties.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.block.geometry import Geometry, SegmentTask, bblock_caps
from scheduler.topology.block.record import BlockIndex
from scheduler.topology.common.budget import BudgetTracker
from scheduler.topology.common.evaluation import Action, Failed, take_nodes
from scheduler.topology.common.types import BoolMask

__all__ = ["StepC", "choose_block", "pick_bblock", "spread_capacity", "whole_free_levels"]

Ints = NDArray[np.int64]
Indices = NDArray[np.intp]


def _lex_last(keys: list[NDArray[np.generic]]) -> int:
    """Position of the lexicographic maximum; ``keys`` most significant first, position
    (later wins) last."""
    return int(np.lexsort(keys[::-1])[-1])


def _per_block(index: BlockIndex, geo: Geometry, counts: Ints) -> tuple[Ints, Ints]:
    """(nodes per block, nodes in the best ``max_llblock`` llblocks of each block)."""
    nb = index.bblock_count
    per_block = np.bincount(
        np.arange(nb) // geo.per_block, weights=counts, minlength=geo.block_count
    ).astype(np.int64)
    if not geo.track_llblocks:
        return per_block, per_block
    ll_count = -(-nb // geo.per_llblock)
    on_ll = np.bincount(
        np.arange(nb) // geo.per_llblock, weights=counts, minlength=ll_count
    ).astype(np.int64)
    ll_per_block = geo.per_block // geo.per_llblock
    if ll_per_block == 0:
        return per_block, np.zeros_like(per_block)
    width = ll_per_block
    padded = np.zeros(geo.block_count * width, dtype=np.int64)
    usable = on_ll[: min(len(on_ll), len(padded))]
    padded[: len(usable)] = usable
    top = -np.sort(-padded.reshape(geo.block_count, width), axis=1)
    return per_block, top[:, : min(geo.max_llblock, width)].sum(axis=1)


def choose_block(
    index: BlockIndex, task: SegmentTask, candidates: BoolMask, counts: Ints, frag: bool
) -> int | Failed:
    """Step A: the block to use, or why none fits."""
    geo = task.geometry
    per_block, avail = _per_block(index, geo, counts)
    blocks = np.arange(geo.block_count)
    ok = avail >= task.rem
    if task.asblock is not None:
        per_as, job_nodes = task.asblock
        on_as = np.bincount(blocks // per_as, weights=per_block).astype(np.int64)
        ok &= on_as[blocks // per_as] >= job_nodes
    placed = candidates & (index.node_bblock >= 0)
    node_block = index.node_bblock[placed] // geo.per_block
    if task.required is not None:
        return _required_block(index, geo, task.required)
    has_nodes = np.bincount(node_block, minlength=geo.block_count) > 0
    chosen_ok = ok & has_nodes
    if not chosen_ok.any():
        code = "ESLURM_TOPO_SEGMENT_NO_FIT" if task.segments > 1 else "ESLURM_TOPO_NO_FIT"
        return Failed(code, Action.BREAK, f"no block at this level has {task.rem} usable nodes")
    if task.estimate is not None:
        size, spread = task.estimate
        fits = per_block[ok] // size
        estimate = int((np.minimum(fits, geo.per_block) if spread else fits).sum())
        if estimate < task.segments:
            return Failed(
                "ESLURM_TOPO_SEGMENT_NO_FIT",
                Action.BREAK,
                f"the blocks hold at most {estimate} of {task.segments} segments",
            )
    lightest = np.zeros(geo.block_count, dtype=np.int64)
    if not index.nodes.uniform_weights:
        lightest[:] = np.iinfo(np.int64).max
        np.minimum.at(lightest, node_block, index.nodes.weights[placed])
    positions = np.flatnonzero(chosen_ok)
    keys: list[NDArray[np.generic]] = [-lightest[positions], -per_block[positions]]
    if frag and task.free is not None and geo.level >= 0:
        keys.append(-_block_frag_cost(index, geo, task.free)[positions])
    keys.append(positions)
    return int(positions[_lex_last(keys)])


def _required_block(index: BlockIndex, geo: Geometry, required: BoolMask) -> int | Failed:
    """The first block holding a required node; all of them must be in it."""
    blocks = index.node_bblock[required] // geo.per_block
    if (index.node_bblock[required] < 0).any():
        return Failed.permanent(
            "ESLURM_TOPO_REQ_NODES_NO_MATCH_TOPO", "a required node is in no block"
        )
    first = int(blocks.min())
    if (blocks != first).any():
        return Failed.permanent(
            "ESLURM_TOPO_REQ_NODES_NO_MATCH_TOPO",
            "the required nodes do not share a block at the job's level",
        )
    return first


def whole_free_levels(
    index: BlockIndex, free: BoolMask, levels: list[int]
) -> list[NDArray[np.bool_]]:
    """For each level, per aggregate at that level: is every node of it free?"""
    nb = index.bblock_count
    sizes = np.fromiter((len(m) for m in index.bblock_nodes), dtype=np.int64, count=nb)
    placed = free & (index.node_bblock >= 0)
    free_counts = np.bincount(index.node_bblock[placed], minlength=nb)
    broken = (free_counts < sizes) | (sizes == 0)
    result = []
    for level in levels:
        agg = np.arange(nb) >> level
        result.append(np.bincount(agg, weights=broken.astype(np.int64)) == 0)
    return result


def _block_frag_cost(index: BlockIndex, geo: Geometry, free: BoolMask) -> Ints:
    """Per block: how many whole free aggregates above its level it would break."""
    above = [level for level in index.levels if level > geo.level]
    cost = np.zeros(geo.block_count, dtype=np.int64)
    for level, whole in zip(above, whole_free_levels(index, free, above), strict=True):
        cost += whole[np.arange(geo.block_count) >> (level - geo.level)]
    return cost


def spread_capacity(index: BlockIndex, geo: Geometry, counts: Ints, size: int) -> int:
    """Slurm's upper bound of ``--spread-segments`` segments the base blocks can hold.

    A base block with at least ``size`` nodes holds one; smaller ones of the same block are
    pooled, a segment then needing ``ceil(size / largest)`` of them.
    """
    total = 0
    pool_sum = pool_count = pool_max = 0
    previous = -1
    for bblock in np.flatnonzero(counts):
        block, count = int(bblock) // geo.per_block, int(counts[bblock])
        if block != previous:
            total += _pooled(pool_sum, pool_count, pool_max, size)
            previous, pool_sum, pool_count, pool_max = block, 0, 0, 0
        if count >= size:
            total += 1
        else:
            pool_sum, pool_count, pool_max = pool_sum + count, pool_count + 1, max(pool_max, count)
    return total + _pooled(pool_sum, pool_count, pool_max, size)


def _pooled(node_sum: int, bblocks: int, largest: int, size: int) -> int:
    if not node_sum:
        return 0
    return min(node_sum // size, bblocks // -(-size // largest))


class StepC:
    """Step C: add base blocks of the chosen block until the segment is complete."""

    def __init__(
        self,
        index: BlockIndex,
        geo: Geometry,
        block: int,
        used: NDArray[np.bool_],
        max_llblock: int,
        tracker: BudgetTracker | None,
        free: BoolMask | None,
    ) -> None:
        self.index, self.geo, self.used = index, geo, used
        self.max_llblock, self.tracker = max_llblock, tracker
        start = block * geo.per_block
        self.members = np.arange(start, min(start + geo.per_block, index.bblock_count))
        self.frag = self._frag_cost(free) if free is not None else None

    def _frag_cost(self, free: BoolMask) -> Ints:
        levels = [lv for lv in self.index.levels if self.geo.level < 0 or lv <= self.geo.level]
        cost = np.zeros(self.index.bblock_count, dtype=np.int64)
        for level, whole in zip(levels, whole_free_levels(self.index, free, levels), strict=True):
            cost += whole[np.arange(self.index.bblock_count) >> level]
        return cost

    def run(self, usable: BoolMask, rem: int, taken: list[Indices]) -> int:
        """Take nodes into ``taken`` (and out of ``usable``); return what is still missing."""
        index, geo = self.index, self.geo
        counts = np.bincount(
            index.node_bblock[usable & (index.node_bblock >= 0)], minlength=index.bblock_count
        ).astype(np.int64)
        if self.tracker is not None and self.tracker.budget.topology == index.name:
            counts = np.minimum(counts, bblock_caps(index, self.tracker))
        open_bblocks = self.members[~self.used[self.members]]
        on_ll = None
        if geo.track_llblocks:
            on_ll = np.bincount(
                open_bblocks // geo.per_llblock,
                weights=counts[open_bblocks],
                minlength=-(-index.bblock_count // geo.per_llblock),
            ).astype(np.int64)
        previous = rem + 1
        while previous != rem:
            previous = rem
            candidates = self.members[~self.used[self.members]]
            if not len(candidates):
                break
            best, same = pick_bblock(candidates, counts, on_ll, self.used, geo, rem, self.frag)
            if on_ll is not None and self.max_llblock <= 0 and not same:
                break
            members = index.bblock_nodes[best]
            got = take_nodes(members[usable[members]], rem, self.tracker)
            usable[got] = False
            taken.append(got)
            rem -= len(got)
            self.used[best] = True
            if rem <= 0:
                break
            if on_ll is not None and not same:
                self.max_llblock -= 1
        return rem


def pick_bblock(
    candidates: Indices,
    counts: Ints,
    on_llblock: Ints | None,
    used: NDArray[np.bool_],
    geo: Geometry,
    rem: int,
    frag: Ints | None,
) -> tuple[int, bool]:
    """Slurm's ``_choose_best_bblock`` over all candidates: (base block, shares an llblock
    with a used base block)."""
    count = counts[candidates]
    fit = count >= rem
    keys: list[NDArray[np.generic]] = []
    same = np.ones(len(candidates), dtype=bool)
    if on_llblock is not None:
        llblock = candidates >> geo.ll_level
        used_ll = np.zeros(len(on_llblock), dtype=bool)
        used_ll[np.flatnonzero(used) >> geo.ll_level] = True
        same = used_ll[llblock]
        ll_nodes = on_llblock[llblock]
        ll_fit = ll_nodes >= rem
        keys += [same, ll_fit, np.where(ll_fit, -ll_nodes, ll_nodes)]
    keys += [fit, np.where(fit, -count, count)]
    if frag is not None:
        keys.append(-frag[candidates])
    keys.append(candidates)
    position = _lex_last(keys)
    return int(candidates[position]), bool(same[position])
