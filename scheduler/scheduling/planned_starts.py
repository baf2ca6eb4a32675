"""When and where the pending jobs are planned to start: Slurm's ``squeue --start``.

:func:`planned_starts` runs the scheduling pass of :mod:`scheduler.schedule` (the same main
pass, backfill stage and availability profile, not a second planner, as
:mod:`scheduler.scheduling.will_run` does for one tested job) over the shard's queue, on
scratch copies; its facts are dropped and nothing of the state changes. Then, for the first
``limit`` jobs the pass left waiting for resources (queue order, Slurm's ``bf_max_job_test``):

- started by the main pass or backfill: now, on the nodes the pass chose;
- reserved by backfill (conservative, or EASY's first blocked job): the reservation;
- otherwise (FCFS, EASY after its one reservation, past ``bf_window``) its earliest start on
  the profile holding the reservations of the jobs before it, without a window, reserved in
  turn: conservative backfill's plan of the whole walk, as Slurm's backfill estimates the start
  of every job it tests.

Jobs held back by a limit, a dependency, a hold or a later begin time, and those past
``limit``, are not planned (``squeue --start`` prints ``N/A`` for them, as Slurm's does for a
job its backfill did not test). Times are on the profile's grid (``bf_resolution``).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.schedule import _Pass
from scheduler.scheduling.backfill import Reservation
from scheduler.scheduling.profile import INFINITE
from scheduler.shard.model import Job
from scheduler.shard.reasons import PendingReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from scheduler.topology import FlatIndex

__all__ = ["PlannedStart", "planned_starts"]

_PLANNED = frozenset({PendingReason.PRIORITY, PendingReason.RESOURCES, PendingReason.NODE_DOWN,
                      PendingReason.CLEANING})
"""The reasons of a waiting job whose start is planned: it waits for nodes, not a limit."""


@dataclass(frozen=True, slots=True)
class PlannedStart:
    """One pending job's expected start and nodes (batch host first)."""

    job_sluid: str
    job_id: int
    start_ms: int
    nodes: tuple[str, ...]


def planned_starts(state: ShardState, now_ms: int, limit: int) -> list[PlannedStart]:
    """The planned starts of the first ``limit`` jobs waiting for resources, in queue order."""
    if not state.pending or limit <= 0:
        return []
    run = _StartsPass(state, Stamper(state, now_ms))
    run.main_pass()
    if state.config.scheduler.policy != "fcfs" and run.waiting:
        run.backfill()
        run.settle_heads()
    try:
        return run.plans(limit)
    finally:
        if hasattr(run, "profile"):
            run.profile.detach()


class _StartsPass(_Pass):
    """A pass that goes on to plan every waiting job it walks."""

    def plans(self, limit: int) -> list[PlannedStart]:
        started = {job.job_sluid: slots for job, slots, _ in self.started}
        waiting = frozenset(self.waiting)
        out: list[PlannedStart] = []
        for position, job in enumerate(self.queue):
            if len(out) >= limit:
                break
            if job.job_sluid in started:
                names = tuple(self.index.names[i] for i in started[job.job_sluid])
                out.append(PlannedStart(job.job_sluid, job.job_id, self.now, names))
                continue
            if position not in waiting or self.reason_of[position] not in _PLANNED:
                continue  # held back by a limit (also one backfill found), not by resources
            found = self.reserved.get(job.job_sluid) or self._plan(job)
            if found is not None:
                start = max(found.start_ms, job.spec.begin_time_ms)
                out.append(PlannedStart(job.job_sluid, job.job_id, start, found.nodes))
        return out

    def _plan(self, job: Job) -> Reservation | None:
        """Reserve ``job``'s earliest start without a window (None: never, on these nodes)."""
        if not hasattr(self, "profile"):
            self.profile = self._profile()
        duration = job.time_limit_s * 1000 if job.time_limit_s > 0 else INFINITE
        if "," in job.partition:  # -p a,b: its earliest over its partitions
            self.reserve_listed(job, duration, INFINITE - 1)
            return self.reserved.get(job.job_sluid)
        topology = self.index.topology_for(job.partition)
        if not isinstance(topology, FlatIndex):
            self._reserve_on(topology, job, duration, INFINITE - 1)
            return self.reserved.get(job.job_sluid)
        found = self.profile.earliest_start(job.demand, self.eligible(job), duration)
        if found is None:
            return None
        start, slots = found
        self.profile.reserve(start, duration, slots)
        names = tuple(self.index.names[i] for i in slots.tolist())
        reservation = Reservation(start, INFINITE if duration >= INFINITE else start + duration,
                                  names)
        self.reserved[job.job_sluid] = reservation
        return reservation
