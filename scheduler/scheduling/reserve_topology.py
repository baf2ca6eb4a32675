"""Backfill reservations on a topology: where the plugin would put the job, and when.

Without a topology a reservation is the earliest time at which ``nodes_min`` eligible nodes are
free (:meth:`scheduler.scheduling.profile.Profile.earliest_start`). With one, any ``nodes_min``
nodes will not do: a block job needs them inside one block (or the block-size combination the plugin
would choose), a segmented job per segment, a topo-exclusive job in units nobody else uses. As
Slurm's backfill runs the select plugin's job test against the future node map at each candidate
start, :func:`earliest_topology_start` asks the same placement the pass uses for starting jobs
now (:func:`scheduler.scheduling.placement.place_job`) at candidate start times ``t``, on
the nodes available for the whole ``[t, t + duration)``: ready by ``t`` for the job's per-node
share and held by no reservation overlapping it. ``busy`` (for topo-exclusive jobs and the
fragmentation-aware tie-break) is the nodes a run is still expected on at ``t`` plus the nodes
reserved over the interval. ``waited_s`` (``--switches``) is counted up to ``t``. Counters
(licenses) and a Mode-3 (power) budget are not consulted, as in the reservations without a
topology. A topo-exclusive job's reservation also holds the rest of its units (the nodes Slurm
would mark BLOCKED), so backfill cannot put a job there.

**Candidates** are the times the available set can grow: the starts of the nodes' feasible
intervals (ready times, and ends of reservations), plus run release times for a topo-exclusive
job (a unit becomes free when its last run ends), restricted to ``bf_window`` and to the times
at which at least ``nodes_min`` nodes are available (a cheap necessary condition).

**Screen.** On a block topology a second necessary condition is cheap: each segment (the whole
job without ``--segment``) lies inside one block of the level sized for it, so those blocks must
hold enough whole segments of available nodes (a ``bincount`` per candidate). The search below
first finds the earliest candidate passing the screen, then asks the plugin from there on;
when the screen is all the plugin needed (nearly always: 7,434 of 7,434 reservations in the
topology study's first seed), that is one placement per reservation.

**Search, bounded.** Availability can only shrink at a *break*: the time from which a node's
feasible interval has ended (a reservation on it would overlap; for a topo-exclusive job also
when any reservation starts to overlap, making its nodes busy). Between two breaks the
candidates form a *run* over which the available set only grows; without other reservations
(always so for EASY's one reservation) all candidates are one run. Run by run, in order: the
first candidate is tried, then (unless it is the last run) the run's last one, where the most
nodes are available: if the plugin cannot place the job there, no candidate of the run needs
trying; if it can, an exponential search (1, 2, 4, 8… candidates past the last failure) and a
binary search find the first candidate where it places (in the last run the exponential
search starts right away). So whenever more available nodes never turn a placement into a
failure, the result is exactly what a walk over every candidate would give, at two placements
per run plus ``O(log candidates)``. At most :data:`MAX_PLACEMENTS` placements are tried per
reservation: after :data:`SCAN_PLACEMENTS` the remaining runs are searched as one (a start the
plugin accepts, possibly later than the earliest: never a wrong one), and if the budget ends
before any success the job gets no reservation this pass, as beyond ``bf_window`` (the
screen's own search is bounded the same way). No clock, no randomness: candidates and breaks
are sorted arrays and the probes a fixed sequence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from scheduler.records import Segment
from scheduler.scheduling.placement import place_job
from scheduler.scheduling.profile import INFINITE, Profile
from scheduler.shard.index import BoolArray, IntArray
from scheduler.shard.model import Job
from scheduler.topology import BlockIndex, TopologyIndex, block_level_for

T = TypeVar("T")

__all__ = ["MAX_PLACEMENTS", "SCAN_PLACEMENTS", "TopologyStart", "earliest_topology_start"]

MAX_PLACEMENTS = 48
"""At most this many plugin placements per reservation."""

SCAN_PLACEMENTS = 16
"""Placements spent run by run before the remaining runs are searched as one (the exponential
and binary search over them need about ``2·log2(candidates)``: 28 for 16,384 candidates)."""


@dataclass(frozen=True, slots=True)
class TopologyStart:
    """Where and when the plugin would start a reserved job."""

    start_ms: int
    slots: IntArray  # rank order, as the plugin returned them
    blocked: IntArray  # the rest of a topo-exclusive job's units (sorted), held too
    segments: tuple[Segment, ...]


def earliest_topology_start(
    profile: Profile,
    topology: TopologyIndex,
    job: Job,
    eligible: BoolArray,
    duration_ms: int,
    window_ms: int,
    fragmentation_aware: bool = False,
) -> TopologyStart | None:
    """The first candidate start (within ``window_ms``) where the plugin places ``job`` on the
    nodes free for ``[t, t + duration_ms)``, with its nodes; None if none is found."""
    lo, hi, slot = profile.start_windows(job.demand, eligible, duration_ms)
    keep = lo <= window_ms
    lo, hi, slot = lo[keep], hi[keep], slot[keep]
    need = job.demand.nodes_min
    if len(lo) < need:
        return None
    times = np.unique(lo)
    exclusive = job.spec.exclusive_topo
    if exclusive:
        releases = profile.release_times(window_ms)
        times = np.union1d(times, releases[releases >= times[0]])
    sorted_lo, sorted_hi = np.sort(lo), np.sort(hi)
    available = np.searchsorted(sorted_lo, times, "right") - np.searchsorted(sorted_hi, times)
    times = times[available >= need]
    if not len(times):
        return None
    reservations = profile.reservations
    breaks = np.unique(hi[hi < INFINITE] + 1)  # a node's feasible interval has ended
    if exclusive and reservations:  # a reservation starts to overlap: its nodes turn busy
        starts = np.array([r[0] for r in reservations], dtype=np.int64) - duration_ms + 1
        breaks = np.union1d(breaks, starts)
    n = len(eligible)
    screen = _block_screen(topology, job) if isinstance(topology, BlockIndex) else None

    def available_at(start: int) -> BoolArray:
        mask = np.zeros(n, dtype=np.bool_)
        mask[slot[(lo <= start) & (hi >= start)]] = True
        return mask

    def attempt(start: int) -> TopologyStart | None:
        mask = available_at(start)
        if screen is not None and not screen(mask):
            return None
        end = INFINITE if duration_ms >= INFINITE else start + duration_ms
        if exclusive or fragmentation_aware:
            busy = profile.running_at(start)
            for r_start, r_end, r_slots in reservations:
                if r_start < end and r_end > start:
                    busy[r_slots] = True
        else:
            busy = ~mask  # not consulted by the plugins without those two options
        placed = place_job(topology, job, mask, busy, start, fragmentation_aware)
        if isinstance(placed, str):
            return None
        return TopologyStart(start, placed.slots, placed.blocked, placed.segments)

    candidates: list[int] = times.tolist()
    runs: list[int] = np.flatnonzero(_run_starts(np.searchsorted(breaks, times, "right"))).tolist()
    if screen is not None:  # first the earliest candidate passing the cheap screen
        passed = _Search(candidates, lambda t: True if screen(available_at(t)) else None)
        first = passed.first(runs)
        if first is None:
            return None
        begin = first[0]
        candidates = candidates[begin:]
        runs = [0, *(r - begin for r in runs if r > begin)]
    found = _Search(candidates, attempt).first(runs)
    return None if found is None else found[1]


def _block_screen(index: BlockIndex, job: Job) -> Callable[[BoolArray], bool] | None:
    """A cheap necessary condition for the block plugin: each segment (the whole job without
    ``--segment``) lies inside one block of the level sized for it, so the blocks of that level
    must hold enough whole segments of available nodes. None when the request is one the
    plugin refuses anyway (a segment not dividing the job): the plugin says so itself."""
    nodes, segment = job.demand.nodes_min, job.spec.segment
    size, count = nodes, 1
    if segment and segment <= nodes:
        if nodes % segment:
            return None
        size, count = segment, nodes // segment
    level, _ = block_level_for(index, size)
    per_block = index.bblock_count if level < 0 else 1 << level
    bblock = index.node_bblock.astype(np.int64)
    covered = bblock >= 0
    group = np.where(covered, bblock // per_block, 0)
    blocks = max(1, -(-index.bblock_count // per_block))

    def may_place(mask: BoolArray) -> bool:
        counts = np.bincount(group[mask & covered], minlength=blocks)
        return int((counts // size).sum()) >= count

    return may_place


def _run_starts(run_of: IntArray) -> BoolArray:
    starts = np.ones(len(run_of), dtype=np.bool_)
    np.not_equal(run_of[1:], run_of[:-1], out=starts[1:])
    return starts


class _Search(Generic[T]):
    """The first candidate where ``attempt`` succeeds, within :data:`MAX_PLACEMENTS` tries."""

    def __init__(self, times: list[int], attempt: Callable[[int], T | None]) -> None:
        self.times, self._attempt, self.tries = times, attempt, 0

    def attempt(self, i: int) -> T | None:
        self.tries += 1
        return self._attempt(self.times[i])

    def first(self, run_starts: list[int]) -> tuple[int, T] | None:
        """Run by run (``run_starts``: the index each run begins at), then the rest as one:
        the index of the first success and its result."""
        ends = [*run_starts[1:], len(self.times)]
        for begin, stop in zip(run_starts, ends, strict=True):
            if self.tries >= SCAN_PLACEMENTS:
                return self.within(begin - 1, len(self.times) - 1)
            found = self.attempt(begin)
            if found is not None:
                return begin, found
            if stop - 1 == begin:
                continue
            if stop == len(self.times):  # the last run: nothing to skip to
                return self.within(begin, stop - 1)
            if (last := self.attempt(stop - 1)) is not None:
                return self.within(begin, stop - 1, last)
        return None

    def within(self, failed: int, last: int, at_last: T | None = None) -> tuple[int, T] | None:
        """The first success in ``(failed, last]`` (known at ``last`` when ``at_last``):
        exponential search from ``failed``, then binary search back to the last failure."""
        step = 1
        while True:
            probe = min(failed + step, last)
            if probe == last and at_last is not None:
                found: T | None = at_last
                break
            if self.tries >= MAX_PLACEMENTS:
                return None
            found = self.attempt(probe)
            if found is not None:
                break
            failed, step = probe, step * 2
            if probe == last:
                return None
        while probe - failed > 1 and self.tries < MAX_PLACEMENTS:
            middle = (failed + probe) // 2
            earlier = self.attempt(middle)
            if earlier is None:
                failed = middle
            else:
                probe, found = middle, earlier
        assert found is not None
        return probe, found
