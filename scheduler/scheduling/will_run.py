"""When a job would start if it were queued now: Slurm's will-run test (``sbatch --test-only``).

:func:`will_run` runs the scheduling pass of :mod:`scheduler.schedule` (the same main pass,
backfill stage and availability profile, not a second planner) over the shard's queue with one
more job, the tested one, put where its priority would put it (after every queued job of its
priority: it is the newest). The pass works on scratch copies, as every pass does, and its facts
are dropped: nothing of the state changes.

- The main pass or backfill starts it: it would start now, on the nodes the pass chose.
- Backfill reserved it (conservative, or EASY's first blocked job): the reservation's start
  and nodes.
- Otherwise (FCFS, EASY behind another blocked job, past ``bf_max_job_test``, past
  ``bf_window``, or waiting on a limit or dependency) the waiting jobs ahead of it are reserved
  in queue order as conservative backfill would (the first ``bf_max_job_test`` waiting jobs at
  most: the work of one backfill walk, so a test behind a longer queue is planned as if the
  jobs past them were not there), then its earliest start on that profile is planned without a
  window: Slurm's backfill plans every job it tests the same way to estimate its start
  (``squeue --start``).

Times are on the profile's grid (``bf_resolution``), as backfill's are. A begin time later
than the planned start moves the start to the begin time. Dependencies, limits and holds are
not waited for: the answer is where and when the resources would be there (Slurm's will-run
test does not wait for them either).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scheduler.jobs.partition_list import best_of
from scheduler.schedule import _Pass
from scheduler.scheduling.licenses import LicenseLedger
from scheduler.scheduling.priority import priorities
from scheduler.scheduling.profile import INFINITE
from scheduler.scheduling.reserve_topology import earliest_topology_start
from scheduler.shard.index import IntArray
from scheduler.shard.model import Job
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from scheduler.topology import FlatIndex

__all__ = ["Plan", "will_run"]


@dataclass(frozen=True, slots=True)
class Plan:
    """Where and when a tested job would start."""

    start_ms: int
    nodes: tuple[str, ...]  # batch host first
    cpus: int  # over all its nodes


def will_run(state: ShardState, job: Job, now_ms: int) -> Plan | None:
    """The plan of ``job`` (not in the state) if it were queued at ``now_ms``; None when no
    start can be planned at all (too few usable nodes of its partition, ever)."""
    run = _WillRun(state, Stamper(state, now_ms), job)
    run.main_pass()
    plan = run.started_plan()  # started by the main pass: backfill cannot change that
    if plan is None:
        if run.policy == "conservative":  # the jobs walked after it cannot move its reservation
            run.waiting = [p for p in run.waiting if p <= run.test_at]
        if run.policy != "fcfs" and run.waiting:
            run.backfill()
            run.settle_heads()
        plan = run.started_plan() or run.reserved_plan() or run.planned()
    if run.has_profile():
        run.profile.detach()
    if plan is not None and plan.start_ms < job.spec.begin_time_ms:
        plan = Plan(job.spec.begin_time_ms, plan.nodes, plan.cpus)
    return plan


class _WillRun(_Pass):
    """A pass whose queue holds the tested job too."""

    def __init__(self, state: ShardState, st: Stamper, job: Job) -> None:
        super().__init__(state, st)
        self.test = job
        self.test_at = 0
        self.policy = state.config.scheduler.policy

    def _prepare(self) -> None:
        super()._prepare()
        job = self.test
        prio = int(priorities(self.state, [job], self.now)[0])
        tiers = {p.name: p.priority_tier for p in self.state.config.partitions}
        key = (best_of(tiers, job.partition, 0), prio)
        at = 0
        for queued, queued_prio in zip(self.queue, self.prios.tolist(), strict=True):
            if not queued.expediting and (best_of(tiers, queued.partition, 0),
                                          queued_prio) < key:
                break  # the first job it sorts before (ties: it is the newest, so after)
            at += 1
        self.queue = [*self.queue[:at], job, *self.queue[at:]]
        self.prios = np.insert(self.prios, at, prio)
        self.test_at = at
        if self.ledger is None and (job.spec.licenses or job.spec.resources):
            self.ledger = LicenseLedger(
                self.state.config,
                self.state.meta.config_texts.get("resources"),
                self.index.names,
                (self.state.jobs[s] for s in self.state.running),
            )

    def has_profile(self) -> bool:
        return hasattr(self, "profile")

    def started_plan(self) -> Plan | None:
        """Started by the main pass or backfill: now, where the pass put it."""
        for job, slot_list, alloc in self.started:
            if job is self.test:
                names = tuple(self.index.names[i] for i in slot_list)
                return Plan(self.now, names, sum(cpus for cpus, _, _ in alloc))
        return None

    def reserved_plan(self) -> Plan | None:
        """Reserved by backfill: the reservation."""
        found = self.reserved.get(self.test.job_sluid)
        if found is None:
            return None
        slots = np.array([self.index.pos[n] for n in found.nodes], dtype=np.int64)
        return Plan(found.start_ms, found.nodes, self._cpus(slots))

    def planned(self) -> Plan | None:
        """Reserve the waiting jobs ahead of it, in queue order (the first ``bf_max_job_test``
        waiting jobs at most, as a backfill walk), then plan its earliest start on that profile
        without a window."""
        if not self.has_profile():
            self.profile = self._profile()
        for position in self.waiting[: self.state.config.scheduler.bf_max_job_test]:
            if position >= self.test_at:
                break
            ahead = self.queue[position]
            if self.reason_of[position] and ahead.job_sluid not in self.reserved:
                limit = ahead.time_limit_s
                self._reserve(ahead, limit * 1000 if limit > 0 else INFINITE)
        job = self.test
        limit_ms = job.time_limit_s * 1000 if job.time_limit_s > 0 else INFINITE
        eligible = self.eligible(job)
        topology = self.index.topology_for(job.partition)
        if isinstance(topology, FlatIndex):
            found = self.profile.earliest_start(job.demand, eligible, limit_ms)
            if found is None:
                return None
            start, slots = found
        else:
            on = earliest_topology_start(
                self.profile, topology, job, eligible, limit_ms, INFINITE - 1,
                self.state.config.scheduler.fragmentation_aware,
            )
            if on is None:
                return None
            start, slots = on.start_ms, on.slots
        names = tuple(self.index.names[i] for i in slots.tolist())
        return Plan(start, names, self._cpus(slots))

    def _cpus(self, slots: IntArray) -> int:
        """The CPUs the job would get on ``slots`` (whole nodes when exclusive; its tasks'
        when they spread unevenly over its nodes, as a start would: ``Free.spread``, not for
        GPUs of the whole job)."""
        demand, spec = self.test.demand, self.test.spec
        if demand.exclusive:
            return int(self.index.cap_cpus[slots].sum())
        count = len(slots)
        if spec.ntasks_per_node <= 0 and spec.ntasks > count > 1 and spec.gpus <= 0:
            return spec.ntasks * max(spec.cpus_per_task, 1)
        return demand.cpus * count
