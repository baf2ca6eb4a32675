"""The availability profile behind backfilling: when could a job start, and holding it there.

A :class:`Profile` is built once per pass from the running jobs (their expected end is the
start plus the time limit, rounded up to ``bf_resolution``; a run past its limit or being killed
is expected to end one resolution step from now; a run without a limit never ends). It answers:

- :meth:`Profile.ready_times`: for one demand, the earliest time each node could host its
  per-node share, as running jobs end (vectorised over the nodes and the end events);
- :meth:`Profile.earliest_start`: the earliest time ``t`` at which ``nodes_min`` eligible nodes
  are ready and hold no reservation overlapping ``[t, t + duration)``, with the nodes (first in
  node order) — a sweep over each node's feasible start intervals;
- :meth:`Profile.reserve`: hold those nodes for ``[t, t + duration)``. Reservations are whole
  nodes, as in Slurm's backfill node-space map;
- :meth:`Profile.free_until`: the nodes whose first reservation starts at or after a time, i.e.
  where a job may start now without delaying any reservation.

Jobs started during the pass are added with :meth:`Profile.add_run`, so later answers see them.

The running jobs' rows come as :class:`ReleaseEvents`, sorted once by node and *raw* end (start
plus limit; 0 for a run being killed) and kept in the node index until a run starts, ends or is
being killed. A pass only maps raw ends onto its own grid (``ceil(max(raw, now + resolution))``,
a monotone map, so the order still holds); the per-node running sums are reused as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from scheduler.scheduling.free import Free
from scheduler.scheduling.release_events import (
    Events,
    FailureFrontier,
    ReleaseEvents,
    event_rows,
    group_ends,
    group_starts,
)
from scheduler.shard.index import INFINITE, BoolArray, IntArray, raw_end
from scheduler.shard.model import Demand

__all__ = ["INFINITE", "FailureFrontier", "Profile", "ReleaseEvents", "raw_end"]

_UNRESERVED: dict[int, IntArray] = {}


def _unreserved(n: int) -> IntArray:
    """A new array of ``n`` INFINITE values (a copy of a kept one: ``np.full`` is a Python
    function, and a pass builds a profile each time)."""
    kept = _UNRESERVED.get(n)
    if kept is None:
        if len(_UNRESERVED) > 16:
            _UNRESERVED.clear()
        kept = _UNRESERVED[n] = np.full(n, INFINITE, dtype=np.int64)
        kept.flags.writeable = False
    return kept.copy()


class Profile:
    """Future availability for one pass: expected ends of runs plus reservations."""

    def __init__(
        self,
        free: Free,
        now_ms: int,
        resolution_s: int,
        loader: Callable[[Profile], None] | None = None,
    ) -> None:
        self.free, self.now = free, now_ms
        self._loader = loader  # adds the running jobs, on first need
        self.resolution = max(resolution_s, 1) * 1000
        n = len(free.index)
        self._base: ReleaseEvents | None = None  # the running jobs (set by the loader)
        # when no node holds two runs: each slot's run's end on the grid, INFINITE if empty
        # (or never); ``_to_general`` supplies the running jobs' events if a second run lands
        self._single: IntArray | None = None
        self._to_general: Callable[[], ReleaseEvents] | None = None
        self._added: list[tuple[IntArray, Sequence[tuple[int, int, int]], int]] = []  # starts
        self._built: Events | None = None
        self.first_reserved: IntArray = _unreserved(n)
        self._res: list[tuple[int, int, IntArray]] = []
        self._gaps: tuple[IntArray, IntArray, IntArray] | None = None

    # -- building ---------------------------------------------------------------------------
    def expected_end(self, start_ms: int, limit_s: int, killing: bool) -> int:
        """When a run is expected to release its nodes, on the resolution grid."""
        if killing:
            end = self.now + self.resolution
        elif limit_s <= 0:
            return INFINITE
        else:
            end = max(start_ms + limit_s * 1000, self.now + self.resolution)
        return -(-end // self.resolution) * self.resolution

    def add_run(
        self, slots: IntArray, alloc: Sequence[tuple[int, int, int]], end_ms: int
    ) -> None:
        """A run holding ``slots`` (``alloc``: cpus, mem, gpus per slot) until ``end_ms``."""
        single = self._single
        if single is not None:
            if not np.count_nonzero(self.free.njobs[slots] != 1):  # on empty nodes: one run each
                single[slots] = end_ms  # (on the grid, or INFINITE: ``expected_end``)
            else:
                self._single, to_general = None, self._to_general
                assert to_general is not None
                self._base = to_general()
        if end_ms < INFINITE and len(slots):
            self._added.append((slots, alloc, end_ms))  # event rows, made when needed
            self._built = None

    def set_base(self, base: ReleaseEvents) -> None:
        """The running jobs' release rows (the loader sets them)."""
        self._base = base
        self._built = None

    def set_single(self, ends: IntArray, to_general: Callable[[], ReleaseEvents]) -> None:
        """No node holds more than one run: ``ends`` is each slot's run's raw end (INFINITE
        when empty; not kept, not changed), which answers :meth:`ready_times` without sorting
        events; the profile keeps them on its grid, where :meth:`add_run` writes its (grid)
        ends. ``to_general`` gives the running jobs' events should a second run land on a
        node."""
        self._single = np.where(ends >= INFINITE, INFINITE, self._grid(ends))
        self._to_general = to_general

    def detach(self) -> None:
        """Drop the callbacks into the pass that built this profile (they close a reference
        cycle that only the garbage collector would break)."""
        self._loader = self._to_general = None

    def _single_ready(self) -> IntArray | None:
        """Per slot, when its one run releases it, on the grid (INFINITE: empty or never)."""
        return self._single

    def _grid(self, raw: IntArray) -> IntArray:
        """Raw ends on this pass's grid: not before one resolution step from now, rounded up."""
        res = self.resolution
        ends: IntArray = np.maximum(raw, self.now + res)  # a new array: the rest in place
        ends += res - 1  # ceil(x / res) * res for x > 0, one array throughout
        ends //= res
        ends *= res
        return ends

    @property
    def loaded(self) -> bool:
        """True once the running jobs were added (the loader ran)."""
        return self._loader is None

    def _load(self) -> None:
        if self._loader is not None:
            loader, self._loader = self._loader, None
            loader(self)

    def _events(self) -> Events:
        self._load()
        if self._base is None and self._to_general is not None:  # asked for while single
            self._base = self._to_general()
            self._built = None
        if self._built is None:
            base = self._base
            if base is not None and not self._added:
                self._built = base.events.retimed(self._grid(base.raw))
            else:
                parts = [event_rows(*added) for added in self._added]
                if base is not None:
                    rows = base.events.rows.copy()
                    rows[:, 1] = self._grid(base.raw)
                    parts.append(rows)
                ev = np.concatenate(parts) if parts else np.zeros((0, 5), dtype=np.int64)
                self._built = Events(ev[np.lexsort((ev[:, 1], ev[:, 0]))])
        return self._built

    # -- questions --------------------------------------------------------------------------
    def ready_times(self, demand: Demand, eligible: BoolArray) -> IntArray:
        """Per node: the earliest time it can host one node's share of ``demand``."""
        free = self.free
        self._load()
        single = self._single_ready()
        if single is not None:  # a run's end frees its whole node: ready then, if eligible
            return self._single_times(demand, eligible, single)
        ev = self._events()
        slot = ev.slot
        if demand.exclusive:
            now_ok = free.njobs == 0
            sat = ev.cumulative(5) >= free.njobs[slot]
        else:
            need_c = demand.cpus - free.cpus
            now_ok = need_c <= 0
            sat = ev.cumulative(2) >= need_c[slot]
            if demand.mem_mb:
                need_m = demand.mem_mb - free.mem
                now_ok &= need_m <= 0
                sat &= ev.cumulative(3) >= need_m[slot]
            if demand.gpus:
                need_g = demand.gpus - free.gpus
                now_ok &= need_g <= 0
                sat &= ev.cumulative(4) >= need_g[slot]
        ready = np.full(len(free.index), INFINITE, dtype=np.int64)
        if len(slot):
            starts = ev.starts
            ready[slot[starts]] = np.minimum.reduceat(np.where(sat, ev.time, INFINITE), starts)
        ready[now_ok] = self.now
        ready[~eligible] = INFINITE
        return ready

    def _single_times(self, demand: Demand, eligible: BoolArray, ends: IntArray) -> IntArray:
        free = self.free
        if demand.exclusive:
            now_ok = free.njobs == 0
        else:
            now_ok = free.cpus >= demand.cpus
            if demand.mem_mb:
                now_ok &= free.mem >= demand.mem_mb
            if demand.gpus:
                now_ok &= free.gpus >= demand.gpus
        # now where it fits now, else its run's end; never where it is not eligible
        ready: IntArray = np.where(eligible, np.where(now_ok, self.now, ends), INFINITE)
        return ready

    def free_until(self, until_ms: int) -> BoolArray:
        """Nodes with no reservation starting before ``until_ms``."""
        result: BoolArray = self.first_reserved >= until_ms
        return result

    def earliest_start(
        self, demand: Demand, eligible: BoolArray, duration_ms: int
    ) -> tuple[int, IntArray] | None:
        """The earliest start and its nodes (``nodes_min``, node order), or None if never."""
        ready = self.ready_times(demand, eligible)
        need = demand.nodes_min
        if not self._res:
            finite = ready[ready < INFINITE]
            if len(finite) < need:
                return None
            finite.partition(need - 1)  # (a copy: the method, without numpy's wrapper)
            start = int(finite[need - 1])
            return start, (ready <= start).nonzero()[0][:need]
        lo, hi, slot = self._intervals(ready, duration_ms)
        if not len(lo):
            return None
        times = np.concatenate((lo, np.minimum(hi, INFINITE - 1) + 1))
        deltas = np.concatenate((np.ones(len(lo), np.int64), -np.ones(len(hi), np.int64)))
        order = np.argsort(times, kind="stable")
        times, counts = times[order], np.cumsum(deltas[order])
        last = group_ends(times)
        hits = ((counts[last] >= need) & (times[last] < INFINITE)).nonzero()[0]
        if not len(hits):
            return None
        start = int(times[last][hits[0]])
        usable = np.unique(slot[(lo <= start) & (hi >= start)])
        return start, usable[:need]

    def start_windows(
        self, demand: Demand, eligible: BoolArray, duration_ms: int
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Each node's feasible start times for ``demand`` over ``duration_ms``, as closed
        intervals ``(lo, hi, slot)``: ready by ``lo`` and no reservation overlapping
        ``[t, t + duration)`` for any ``lo ≤ t ≤ hi`` (a node may have several, disjoint)."""
        ready = self.ready_times(demand, eligible)
        if not self._res:
            slots = (ready < INFINITE).nonzero()[0]
            return ready[slots], np.full(len(slots), INFINITE, dtype=np.int64), slots
        return self._intervals(ready, duration_ms)

    def running_at(self, time_ms: int) -> BoolArray:
        """Nodes on which a run (running, or started in the pass) is still expected at
        ``time_ms``: more runs now than release events up to then."""
        ev = self._events()
        released = np.bincount(ev.slot[ev.time <= time_ms], minlength=len(self.free.njobs))
        result: BoolArray = self.free.njobs > released
        return result

    def release_times(self, until_ms: int) -> IntArray:
        """The distinct times, in order, at which some run is expected to end, up to
        ``until_ms``."""
        ev = self._events()
        return np.unique(ev.time[ev.time <= until_ms])

    def _intervals(self, ready: IntArray, duration_ms: int) -> tuple[IntArray, IntArray, IntArray]:
        """Each node's feasible start times as closed intervals [lo, hi] (disjoint per node)."""
        gap_slot, gap_lo, gap_hi = self._gap_arrays()
        lo = np.maximum(gap_lo, ready[gap_slot])
        hi = np.where(gap_hi >= INFINITE, INFINITE, gap_hi - duration_ms)
        keep = (lo <= hi) & (ready[gap_slot] < INFINITE)
        free_slots = ((self.first_reserved >= INFINITE) & (ready < INFINITE)).nonzero()[0]
        return (
            np.concatenate((ready[free_slots], lo[keep])),
            np.concatenate((np.full(len(free_slots), INFINITE), hi[keep])),
            np.concatenate((free_slots, gap_slot[keep])),
        )

    def _gap_arrays(self) -> tuple[IntArray, IntArray, IntArray]:
        """The gaps between reservations on each reserved node (before, between, after)."""
        if self._gaps is None:
            counts = [len(s) for _, _, s in self._res]
            slot = np.concatenate([s for _, _, s in self._res])
            res_lo = np.repeat(np.array([r[0] for r in self._res], dtype=np.int64), counts)
            res_hi = np.repeat(np.array([r[1] for r in self._res], dtype=np.int64), counts)
            order = np.lexsort((res_lo, slot))
            slot, res_lo, res_hi = slot[order], res_lo[order], res_hi[order]
            first, last = group_starts(slot), group_ends(slot)
            before_lo = np.where(first, -INFINITE, np.roll(res_hi, 1))
            self._gaps = (
                np.concatenate((slot, slot[last])),
                np.concatenate((before_lo, res_hi[last])),
                np.concatenate((res_lo, np.full(int(last.sum()), INFINITE))),
            )
        return self._gaps

    def reserve(self, start_ms: int, duration_ms: int, slots: IntArray) -> None:
        """Hold ``slots`` for ``[start, start + duration)``."""
        end = INFINITE if duration_ms >= INFINITE else start_ms + duration_ms
        if self._res:
            self.first_reserved[slots] = np.minimum(self.first_reserved[slots], start_ms)
        else:  # the first reservation (EASY's only one): every node was unreserved (INFINITE)
            self.first_reserved[slots] = min(start_ms, INFINITE)
        self._res.append((start_ms, end, slots))
        self._gaps = None

    @property
    def reservations(self) -> list[tuple[int, int, IntArray]]:
        """The reservations made so far: (start, end, node slots)."""
        return list(self._res)
