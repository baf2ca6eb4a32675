"""The rows the backfill profile (:mod:`scheduler.scheduling.profile`) is built from.

:class:`ReleaseEvents` are the running jobs' release rows (slot, raw end, cpus, mem, gpus),
sorted once by slot and raw end and kept in the node index until the runs change;
:class:`Events` are such rows on one pass's time grid, with per-node running sums computed on
demand; :class:`FailureFrontier` is the staircase of job sizes known not to fit in a pass.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from scheduler.shard.index import INFINITE, BoolArray, IntArray

__all__ = [
    "Events",
    "FailureFrontier",
    "ReleaseEvents",
    "event_rows",
    "group_ends",
    "group_starts",
]


class ReleaseEvents:
    """The running jobs' release rows (slot, raw end, cpus, mem, gpus) sorted by slot, raw end;
    runs that never end are left out."""

    __slots__ = ("events", "raw")

    def __init__(self, slots: IntArray, alloc: IntArray, raw_ends: IntArray) -> None:
        keep = raw_ends < INFINITE
        if not keep.all():
            slots, alloc, raw_ends = slots[keep], alloc[keep], raw_ends[keep]
        rows = np.empty((len(slots), 5), dtype=np.int64)
        rows[:, 0], rows[:, 1], rows[:, 2:] = slots, raw_ends, alloc
        self.events = Events(rows[np.lexsort((rows[:, 1], rows[:, 0]))])
        self.raw = self.events.time


class FailureFrontier:
    """Job sizes known not to fit now, as a staircase of (nodes, duration) points.

    Within one pass free resources only shrink and reservations only grow, so a job of the same
    per-node shape needing at least as many nodes for at least as long fails as well.
    """

    __slots__ = ("durations", "nodes")

    def __init__(self) -> None:
        self.nodes: list[int] = []  # ascending
        self.durations: list[int] = []  # descending along the staircase

    def dominated(self, nodes: int, duration: int) -> bool:
        """True when a point with fewer (or equal) nodes and shorter (or equal) time failed."""
        i = bisect.bisect_right(self.nodes, nodes)
        return i > 0 and self.durations[i - 1] <= duration

    def add(self, nodes: int, duration: int) -> None:
        """Record a failure, dropping the points it dominates."""
        if self.dominated(nodes, duration):
            return
        i = bisect.bisect_left(self.nodes, nodes)
        j = i
        while j < len(self.nodes) and self.durations[j] >= duration:
            j += 1
        self.nodes[i:j] = [nodes]
        self.durations[i:j] = [duration]


class Events:
    """Release events sorted by (node slot, time), with per-node running sums on demand."""

    __slots__ = ("_cum", "_lengths", "rows", "slot", "starts", "time")

    def __init__(self, rows: IntArray) -> None:
        self.rows = rows
        self.slot, self.time = rows[:, 0], rows[:, 1]
        if len(rows):
            self.starts = np.flatnonzero(group_starts(self.slot))
        else:
            self.starts = np.zeros(0, dtype=np.int64)
        self._lengths = np.diff(self.starts, append=len(rows))
        self._cum: dict[int, IntArray] = {}

    def retimed(self, time: IntArray) -> Events:
        """The same rows with other times in the same order (the running sums are shared)."""
        other = Events.__new__(Events)
        other.rows, other.slot, other.starts = self.rows, self.slot, self.starts
        other._lengths, other._cum, other.time = self._lengths, self._cum, time
        return other

    def cumulative(self, column: int) -> IntArray:
        """Per event: the sum of ``column`` over its node's events up to it (5 = count)."""
        cum = self._cum.get(column)
        if cum is None:
            values = (
                np.ones(len(self.rows), dtype=np.int64) if column == 5 else self.rows[:, column]
            )
            total = np.cumsum(values)
            base = np.repeat(total[self.starts] - values[self.starts], self._lengths)
            cum = self._cum[column] = total - base
        return cum


def event_rows(slots: IntArray, alloc: Sequence[tuple[int, int, int]], end_ms: int) -> IntArray:
    """Event rows (slot, time, cpus, mem, gpus) of one run."""
    rows = np.empty((len(slots), 5), dtype=np.int64)
    rows[:, 0], rows[:, 1], rows[:, 2:] = slots, end_ms, np.array(alloc, dtype=np.int64)
    return rows


def group_starts(values: IntArray) -> BoolArray:
    """True where a run of equal values begins (``values`` non-empty)."""
    mask = np.empty(len(values), dtype=np.bool_)
    mask[0] = True
    np.not_equal(values[1:], values[:-1], out=mask[1:])
    return mask


def group_ends(values: IntArray) -> BoolArray:
    """True where a run of equal values ends (``values`` non-empty)."""
    mask = np.empty(len(values), dtype=np.bool_)
    mask[-1] = True
    np.not_equal(values[1:], values[:-1], out=mask[:-1])
    return mask
