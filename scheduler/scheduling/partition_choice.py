"""The main pass's try of a job submitted to several partitions (``-p a,b``).

Slurm queues such a job once per partition and starts it in the first where it can start
(:mod:`scheduler.jobs.partition_list`). The pass does the same at the job's place in the
queue: each partition of its list in turn (highest ``PriorityTier`` first) with that
partition's limits, blocked set, nodes and topology; the first that starts it names the run's
partition. A partition where it cannot start for resources is blocked for the jobs after it,
as a single partition's job blocks its own; one whose usable nodes could never hold it (too
few, or ``-w`` naming another partition's) blocks nothing (:meth:`PartitionChoice.never_in`).
Backfill does not start or reserve for it.
"""

from __future__ import annotations

import numpy as np

from scheduler.jobs.node_filter import allowed_slots
from scheduler.records import Segment
from scheduler.reservations.windows import hold_wait, reservation_wait
from scheduler.scheduling.backfill import Placed
from scheduler.scheduling.free import Free
from scheduler.scheduling.limits import PassUsage, waiting_reason
from scheduler.shard.index import BoolArray, IntArray, NodeIndex
from scheduler.shard.model import Job, job_with
from scheduler.shard.reasons import PendingReason
from scheduler.shard.state import ShardState

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
    all_plain: bool

    def eligible(self, job: Job) -> BoolArray:
        raise NotImplementedError

    def place(self, job: Job, mask: BoolArray) -> Placed | str:
        raise NotImplementedError

    def start(
        self, job: Job, slots: IntArray, segments: tuple[Segment, ...] = (), spread: bool = True,
        priority: int = 0,
    ) -> list[tuple[int, int, int]]:
        raise NotImplementedError

    def try_listed(self, job: Job, position: int) -> None:
        """The main pass's step for the listed ``job`` at ``position`` in the queue."""
        self.all_plain = False
        reason = self.start_in_any(job, int(self.prios[position]))
        self.reason_of.append(reason)
        if reason and reason != job.reason:
            self.changed.append(position)

    def start_in_any(self, job: Job, priority: int) -> str:
        """Start ``job`` (of ``priority``) in the first partition of its list where it can
        start ("" then); else the first partition's pending reason."""
        state, now, spec = self.state, self.now, job.spec
        first = ""
        for name in job.partition.split(","):
            trial = job_with(job, partition=name)
            reason = (hold_wait(trial, reservation_wait(state, trial, now))
                      if spec.reservation else "") or waiting_reason(state, trial, self.usage, now)
            key = RESV_KEY + spec.reservation if spec.reservation else name
            if not reason and key in self.blocked:
                reason = PendingReason.PRIORITY
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
            first = first or reason
        return first


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
