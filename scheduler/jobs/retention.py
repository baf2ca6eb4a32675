"""Forgetting ended jobs without forgetting that they existed.

An ended job stays in ``state.jobs`` for ``MinJobAge`` seconds (like Slurm's MinJobAge) so
dependencies, late exit reports and queries still see it; then it is purged. Its SLUID moves to a
:class:`KnownSluids` window so a late duplicate submission is still recognised as the same job.

The window is bounded two ways. SLUIDs carry their mint time, so the window keeps only purged
SLUIDs minted at or after ``floor_ms`` (= now - ``DedupeWindow``), in one sorted array (with the
nonce of each one's submission, when it had one); and at
most ``DedupeMaxJobs`` of them (when more, the oldest go and the floor rises past them). A
submission whose SLUID was minted before the floor cannot be checked, so it is refused with
``StaleSubmission`` (the client mints a new SLUID): duplicate detection is exact, never a guess.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scheduler.scheduling.fairshare import accrual_due
from schemas.sluid import SEQUENCE_BITS, TIME_MAX, InvalidSluidError, parse_sluid

if TYPE_CHECKING:
    from scheduler.shard.model import Job
    from scheduler.shard.state import ShardState

__all__ = ["KnownSluids", "cycle_changes_state", "purge_due", "purge_ended", "sluid_ms"]


def sluid_ms(text: str) -> int:
    """The mint time of a SLUID text, or -1 when it is not a SLUID."""
    try:
        return (parse_sluid(text) >> SEQUENCE_BITS) & TIME_MAX  # decode(...).unix_ms
    except InvalidSluidError:
        return -1


@dataclass(slots=True)
class KnownSluids:
    """Purged job SLUIDs still remembered for duplicate detection (sorted by time, bounded),
    with the nonce of the submission that queued each (those that had one)."""

    floor_ms: int = 0
    keys: list[int] = field(default_factory=list)  # time-first keys, see _time_first
    nonces: dict[int, int] = field(default_factory=dict)  # key → its submission's nonce

    def __contains__(self, text: str) -> bool:
        if not self.keys:
            return False
        try:
            key = _time_first(parse_sluid(text))
        except InvalidSluidError:
            return False
        i = bisect.bisect_left(self.keys, key)
        return i < len(self.keys) and self.keys[i] == key

    def __len__(self) -> int:
        return len(self.keys)

    def is_stale(self, text: str) -> bool:
        """True when ``text`` was minted before the window and so cannot be checked."""
        return sluid_ms(text) < self.floor_ms

    def remember(self, text: str, nonce: int = 0) -> None:
        """Add a purged job's SLUID and its submission's nonce, if it had one (ignored when
        older than the floor)."""
        try:
            number = parse_sluid(text)
        except InvalidSluidError:
            return
        if ((number >> SEQUENCE_BITS) & TIME_MAX) >= self.floor_ms:  # decode(number).unix_ms
            key = _time_first(number)
            bisect.insort(self.keys, key)
            if nonce:
                self.nonces[key] = nonce

    def nonce_of(self, text: str) -> int:
        """The nonce of the submission that queued purged job ``text`` (0: none recorded)."""
        if not self.nonces:
            return 0
        try:
            return self.nonces.get(_time_first(parse_sluid(text)), 0)
        except InvalidSluidError:
            return 0

    def trim(self, now_ms: int, window_s: int, max_jobs: int) -> None:
        """Raise the floor to ``now - window`` and drop what falls below it or over the cap."""
        self.floor_ms = max(self.floor_ms, now_ms - window_s * 1000)
        cut = bisect.bisect_left(self.keys, self.floor_ms << _LOW_BITS)
        if len(self.keys) - cut > max_jobs:
            cut = len(self.keys) - max_jobs
            self.floor_ms = max(self.floor_ms, (self.keys[cut - 1] >> _LOW_BITS) + 1)
            cut = bisect.bisect_left(self.keys, self.floor_ms << _LOW_BITS)
        if cut:
            for key in self.keys[:cut] if self.nonces else ():
                self.nonces.pop(key, None)
            del self.keys[:cut]


_LOW_BITS = 22  # 10-bit sequence + 12-bit cluster id under the 42-bit time


def _time_first(number: int) -> int:
    """Reorder a SLUID's fields to (time, sequence, cluster) so keys sort by mint time."""
    return ((number & ((1 << 52) - 1)) << 12) | (number >> 52)


def purge_due(state: ShardState, time_ms: int) -> bool:
    """True when a ``CycleCompleted`` at ``time_ms`` would purge an ended job."""
    for sluid in state.ended:  # the first is the oldest (see purge_ended)
        age_ms = state.config.scheduler.min_job_age_s * 1000
        return state.jobs[sluid].end_ms <= max(time_ms, state.meta.now_ms) - age_ms
    return False


def cycle_changes_state(state: ShardState, time_ms: int) -> bool:
    """True when a ``CycleCompleted`` at ``time_ms`` would change more than the cycle's own
    counters: purge an ended job or accrue fair-share usage. A simulation, which has no inbox
    to record, closes a cycle only then — the scheduling decisions are the same."""
    return purge_due(state, time_ms) or accrual_due(state, time_ms)


def purge_ended(state: ShardState) -> tuple[str, ...]:
    """Drop jobs ended at least ``MinJobAge`` ago (evolve only); return their SLUIDs.

    Purged SLUIDs move to ``state.meta.known``; the window is trimmed at the same time.
    The order is explicit: by end time, then job id. ``state.ended`` is kept in end-time order
    (facts come in time order; a restored state sorts it), so the expired jobs are a prefix.
    """
    meta, scheduler = state.meta, state.config.scheduler
    horizon = meta.now_ms - scheduler.min_job_age_s * 1000
    expired = []
    for sluid in state.ended:
        job = state.jobs[sluid]
        if job.end_ms > horizon:
            break
        expired.append(job)
    expired.sort(key=lambda job: (job.end_ms, job.job_id))
    for job in expired:
        del state.jobs[job.job_sluid]
        del state.ended[job.job_sluid]
        state.job_by_id.pop(job.job_id, None)
        meta.known.remember(job.job_sluid, job.nonce)
        _forget_task(state, job)
    meta.known.trim(meta.now_ms, scheduler.dedupe_window_s, scheduler.dedupe_max_jobs)
    return tuple(job.job_sluid for job in expired)


def _forget_task(state: ShardState, job: Job) -> None:
    tasks = state.arrays.get(job.array_job_sluid)
    if tasks is None:
        return
    tasks.remove(job.job_sluid)
    if not tasks:
        del state.arrays[job.array_job_sluid]
        state.meta.known.remember(job.array_job_sluid, job.nonce)
