"""The main pass's try of a job submitted to several partitions (``-p a,b``).

Slurm queues such a job once per partition and starts it in the first where it can start
(:mod:`scheduler.jobs.partition_list`). The pass does the same at the job's place in the
queue: each partition of its list in turn (highest ``PriorityTier`` first) with that
partition's limits, blocked set, nodes and topology; the first that starts it names the run's
partition. A partition where it cannot start for resources is blocked for the jobs after it,
as a single partition's job blocks its own; one whose usable nodes could never hold it (too
few, or ``-w`` naming another partition's) blocks nothing (:meth:`PartitionChoice.never_in`).

Backfill walks it at its place among the waiting jobs, as Slurm's backfill walks each of the
job's partitions: it starts it in the first partition (list order) where it fits now without
delaying a reservation; else it reserves its earliest start over those partitions (the first of
them on a tie). Only the partitions where nothing but resources held it in the main pass (no
limit, no license shortage, not too few nodes ever) are tried.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler.jobs.node_filter import allowed_slots
from scheduler.records import Segment
from scheduler.reservations.windows import hold_wait, reservation_wait
from scheduler.scheduling.backfill import Placed, Reservation
from scheduler.scheduling.free import Free
from scheduler.scheduling.limits import PassUsage, running_reason, waiting_reason
from scheduler.scheduling.profile import INFINITE, FailureFrontier, Profile
from scheduler.scheduling.reserve_topology import earliest_topology_start
from scheduler.shard.index import BoolArray, IntArray, NodeIndex
from scheduler.shard.model import Job, job_with
from scheduler.shard.reasons import PendingReason
from scheduler.shard.state import ShardState
from scheduler.topology import FlatIndex

__all__ = ["RESV_KEY", "PartitionChoice"]

RESV_KEY = "\0reservation:"
"""An advanced reservation's name's prefix in the main pass's blocked set (else partitions)."""


class PartitionChoice:
    """The pass's try of a listed job (mixed into the pass)."""

    state: ShardState
    usage: PassUsage
    free: Free
    index: NodeIndex
    now: int
    blocked: set[str]
    reason_of: list[str]
    prios: np.ndarray
    changed: list[int]
    waiting: list[int]
    all_plain: bool
    # per listed job waiting for resources: its partitions backfill tries (as trial jobs)
    listed_tries: dict[str, tuple[Job, ...]]
    profile: Profile
    failed: dict[tuple[int, tuple[int, int, int, str, bool], str, str], FailureFrontier]
    bf_starts: int
    open_nodes: int
    reserve_missed: bool
    reserved: dict[str, Reservation]
    fits_reserved: dict[tuple[int, tuple[int, int, int, str, bool]], IntArray]
    heads: list[Job]
    started: list[tuple[Job, list[int], list[tuple[int, int, int]]]]

    def eligible(self, job: Job) -> BoolArray:
        raise NotImplementedError

    def place(self, job: Job, mask: BoolArray) -> Placed | str:
        raise NotImplementedError

    def start(
        self, job: Job, slots: IntArray, segments: tuple[Segment, ...] = (), spread: bool = True,
        priority: int = 0,
    ) -> list[tuple[int, int, int]]:
        raise NotImplementedError

    if TYPE_CHECKING:  # backfill's (BackfillStage, after this mixin in the pass's bases)
        def _backfill_place(self, job: Job, duration: int) -> Placed | None: ...

        def _backfill_start(self, job: Job, position: int, placed: Placed) -> None: ...

    def try_listed(self, job: Job, position: int) -> int:
        """The main pass's step for the listed ``job`` at ``position`` in the queue: its
        ``nodes_min`` if it waits for resources in some partition (backfill walks it), else
        ``INFINITE``."""
        self.all_plain = False
        reason = self.start_in_any(job, int(self.prios[position]))
        self.reason_of.append(reason)
        if reason and reason != job.reason:
            self.changed.append(position)
        if reason and self.listed_tries.get(job.job_sluid):
            self.waiting.append(position)
            return job.demand.nodes_min
        return INFINITE

    def start_in_any(self, job: Job, priority: int) -> str:
        """Start ``job`` (of ``priority``) in the first partition of its list where it can
        start ("" then); else the first partition's pending reason."""
        state, now, spec = self.state, self.now, job.spec
        first = ""
        tries: list[Job] = []
        for name in job.partition.split(","):
            trial = job_with(job, partition=name)
            reason = (hold_wait(trial, reservation_wait(state, trial, now))
                      if spec.reservation else "") or waiting_reason(state, trial, self.usage, now)
            key = RESV_KEY + spec.reservation if spec.reservation else name
            if not reason and key in self.blocked:
                reason = PendingReason.PRIORITY
                if not self.never_in(trial):
                    tries.append(trial)  # blocked: backfill may still start it there
            if not reason and self.never_in(trial):
                reason = PendingReason.RESOURCES  # too few nodes there at all: blocks nothing
            if not reason:
                placed = self.place(trial, self.free.fits(trial.demand, self.eligible(trial)))
                if not isinstance(placed, str):
                    self.start(trial, *placed, priority=priority)
                    return ""
                reason = placed
                if reason != PendingReason.LICENSES:  # counters, not nodes: no blocking
                    self.blocked.add(key)
                    tries.append(trial)
            first = first or reason
        if tries:
            self.listed_tries[job.job_sluid] = tuple(tries)
        return first

    def backfill_listed(self, job: Job, position: int, easy: bool) -> None:
        """Backfill's step for the listed ``job`` (at ``position``): start it in the first of
        its partitions where it fits without delaying a reservation, else reserve (conservative;
        EASY: owe it the one reservation if none is made yet)."""
        trials = self.listed_tries[job.job_sluid]
        if self.started:  # jobs started in this pass may have reached a limit
            helds = [running_reason(self.state, trial, self.usage, self.now) for trial in trials]
            if all(helds):
                self.reason_of[position] = helds[0]
                self.changed.append(position)
                return
            trials = tuple(t for t, held in zip(trials, helds, strict=True) if not held)
        config = self.state.config.scheduler
        demand, duration = job.demand, _duration_ms(job)
        if demand.nodes_min <= self.open_nodes and (
            not config.bf_max_job_start or self.bf_starts < config.bf_max_job_start
        ):
            for trial in trials:
                shape = (id(self.eligible(trial)), demand.shape, job.spec.licenses,
                         job.spec.resources)
                tried = self.failed.get(shape)
                if tried is None:
                    tried = self.failed[shape] = FailureFrontier()
                if tried.dominated(demand.nodes_min, duration):
                    continue
                placed = self._backfill_place(trial, duration)
                if placed is not None:
                    self._backfill_start(trial, position, placed)
                    filled = int(np.count_nonzero(self.free.cpus[placed[0]] <= 0))
                    self.bf_starts += 1
                    self.open_nodes -= filled
                    return
                tried.add(demand.nodes_min, duration)
        if not easy:
            self.reserve_listed(job, duration)
        elif not self.reserved:
            self.heads.append(job)

    def reserve_listed(self, job: Job, duration: int, window: int = -1) -> None:
        """Reserve the listed ``job``'s earliest start within ``window`` (default the backfill
        window) over the partitions backfill tries, the first of them on a tie."""
        if window < 0:
            window = self.now + self.state.config.scheduler.bf_window_s * 1000
        names = self.index.names
        best: tuple[int, IntArray, Reservation] | None = None
        for trial in self.listed_tries.get(job.job_sluid, ()):
            topology = self.index.topology_for(trial.partition)
            eligible = self.eligible(trial)
            if isinstance(topology, FlatIndex):
                found = self.profile.earliest_start(trial.demand, eligible, duration)
                if found is None or found[0] > window:
                    continue
                start, held, chosen = found[0], found[1], (found[1], found[1][:0])
            else:
                plan = earliest_topology_start(
                    self.profile, topology, trial, eligible, duration, window,
                    self.state.config.scheduler.fragmentation_aware)
                if plan is None:
                    continue
                start, chosen = plan.start_ms, (plan.slots, plan.blocked)
                held = (np.union1d(plan.slots, plan.blocked) if len(plan.blocked)
                        else plan.slots)
            if best is None or start < best[0]:
                end = INFINITE if duration >= INFINITE else start + duration
                best = (start, held, Reservation(
                    start, end, tuple(names[i] for i in chosen[0].tolist()),
                    tuple(names[i] for i in chosen[1].tolist())))
        if best is None:
            self.reserve_missed = True
            return
        self.profile.reserve(best[0], duration, best[1])
        self.fits_reserved.clear()
        self.reserved[job.job_sluid] = best[2]


    def never_in(self, trial: Job) -> bool:
        """Whether ``trial``'s partition has too few usable nodes big enough for it, busy or
        not (``-N 2`` where it has one, ``-w`` naming another partition's node): one
        partition of the list admitted the job, not necessarily this one. Such a try blocks
        nothing, as Slurm does not fail a partition for a job it can never run there
        (``ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE``): it held every later job of the
        partition at ``Priority`` (under ``sched/builtin``, for good)."""
        spec = trial.spec
        mask = self.free.eligible(trial.demand, self.index.part_masks.get(trial.partition))
        if spec.constraint or spec.nodelist or spec.exclude:
            mask = mask & allowed_slots(self.state, self.index, spec)
        return int(np.count_nonzero(mask)) < trial.demand.nodes_min


def _duration_ms(job: Job) -> int:
    return job.time_limit_s * 1000 if job.time_limit_s > 0 else INFINITE
