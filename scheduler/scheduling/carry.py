"""Carrying a pass to the next one when only new jobs joined the queue.

A pass leaves behind what it decided: each queued job's reason, the jobs it started, the EASY
reservation, backfill's failure frontier. If the next pass finds that nothing but new
submissions changed since (``evolve`` drops the carried pass on any other fact that changes the
state, see ``ShardState.carried``; the pass checks its own facts were folded), every job of the
earlier pass would be decided the same way again — under the conditions below — so the next
pass walks only the new jobs, at the tail of the queue, from where the earlier pass stopped. It
gives the facts a whole pass would give (a property test compares them after every step of
random histories); it is a cache, not a rule.

Why the old jobs' decisions hold (all checked before carrying, or when resuming):

- the queue is first come, first served (one ``PriorityTier``, no priority weights, no held,
  niced or expediting job), so new jobs come last and every priority is 1;
- every queued job took the main pass's plain path (no hold, begin time, dependency, array,
  QOS, MaxWall or account limit), so its reason depends on the free nodes and its place only;
- no licenses, no hot swap, no COMPLETING nodes, only the flat topology, policy EASY or FCFS;
- no advanced reservation (what a job may use depends on the time: scheduler.reservations);
- the earlier pass's facts were folded: each job carries the reason the pass gave it, and its
  starts (and nothing else) moved the index's ``runs_version`` and left the queue;
- no run is past its limit, being killed, or within one ``bf_resolution`` of its limit at the
  new time: then the backfill profile (each node's expected release, on the resolution grid)
  does not depend on the time, so the EASY reservation is the same, and a job that could not
  start before its end at the earlier time cannot now (it ends later, the reservation is the
  same; the failure frontier stays true); no timeout is due;
- the earlier pass made every reservation it sought (none was past ``bf_window``, which moves
  with the time);
- if it started jobs: the jobs it started later in the walk only took nodes, so every job it
  turned down still cannot start, the blocked head still does not fit, and the reservation is
  the same (a job backfilled onto reserved nodes ends by the reservation's start, on the grid);
  a whole pass would count starts and tested jobs anew, so there is no ``bf_max_job_start`` and
  every waiting job was tested;
- each new job is plain and of a partition the earlier pass found blocked: it waits with
  ``Priority`` in the main pass, and backfill treats it after all the earlier jobs.
"""

from __future__ import annotations

import numpy as np

from scheduler.records import Fact
from scheduler.requeue.hotswap import Kept
from scheduler.scheduling.backfill import BackfillStage
from scheduler.scheduling.free import Free
from scheduler.scheduling.licenses import LicenseLedger
from scheduler.scheduling.limits import PassUsage
from scheduler.scheduling.priority import first_come_order, ones
from scheduler.scheduling.profile import INFINITE
from scheduler.shard.index import BoolArray
from scheduler.shard.model import Job
from scheduler.shard.reasons import PendingReason
from scheduler.shard.stamp import Stamper
from scheduler.topology import FlatIndex

__all__ = ["CarryStage"]


class CarryStage(BackfillStage):
    """What a pass keeps to be carried, and the carrying (see the module docstring)."""

    st: Stamper
    free: Free
    usage: PassUsage
    facts: list[Fact]
    prios: np.ndarray
    blocked: set[str]  # partitions the main pass found blocked
    all_plain: bool  # every queued job took the main pass's plain path
    first_come: bool  # the queue was in first-come order, every priority 1
    # what the state must show when the next pass resumes this one: its queue's length and
    # last entry, the index's runs_version, the jobs it started (no longer pending)
    fifo_len: int
    fifo_last: tuple[int, int, str] | None
    runs_version: int
    started_sluids: list[str]
    completing: BoolArray | None
    kept: dict[str, Kept]
    ledger: LicenseLedger | None

    def carriable(self, timeouts: bool) -> bool:
        """Whether the next pass may carry this one on (it made no change to carry over)."""
        index = self.index
        config = self.state.config.scheduler
        return (
            not timeouts
            and not self.state.meta.reservations  # windows move with the time
            and (
                not self.started  # else the next pass counts starts and tested jobs anew
                or (not config.bf_max_job_start and len(self.waiting) <= config.bf_max_job_test)
            )
            and bool(self.blocked)
            and self.all_plain
            and self.first_come
            and config.policy in ("easy", "fcfs")
            and not self.reserve_missed
            and self.ledger is None
            and not self.kept
            and self.completing is None
            and not index.topologies
            and isinstance(index.topology, FlatIndex)
        )

    def keep_queue(self) -> None:
        """Note the queue this pass leaves (the next pass checks that it only grew): the jobs
        it started leave the queue, as their ``JobStarted`` will take them out of the state's."""
        fifo = self.state.fifo()
        self.runs_version = self.index.runs_version + len(self.started)
        self.started_sluids = [job.job_sluid for job, _, _ in self.started]
        self.fifo_len = len(fifo) - len(self.started)  # (the pass started queued jobs only)
        self.fifo_last = None
        gone = set(self.started_sluids)
        for key in reversed(fifo):  # the last one it did not start
            if key[2] not in gone:
                self.fifo_last = key
                break

    def _drop_started(self) -> None:
        """Take the started jobs out of the pass's queue, as if it had never held them."""
        kept = [p for p, reason in enumerate(self.reason_of) if reason]
        at = {p: i for i, p in enumerate(kept)}
        self.queue = [self.queue[p] for p in kept]
        self.reason_of = [self.reason_of[p] for p in kept]
        self.waiting = [at[p] for p in self.waiting if p in at]
        self.changed = [at[p] for p in self.changed if p in at]
        self.smallest_waiting = min(
            (self.queue[p].demand.nodes_min for p in self.waiting), default=INFINITE
        )
        self.started = []

    def resume(self, st: Stamper) -> bool:
        """Carry this pass to ``st.time_ms`` if only new plain jobs of blocked partitions
        joined the queue (then walk them and return True); else False (a whole pass follows,
        and replaces this one)."""
        state, now = self.state, st.time_ms
        if (
            state.built_index() is not self.index
            or state.out_of_order
            or state.asking_licenses
            or state.completing
            or state.meta.reservations
            or not first_come_order(state)
        ):
            return False
        index, pending = self.index, state.pending
        if index.runs_version != self.runs_version or any(
            s in pending for s in self.started_sluids
        ):  # its starts were not folded, or the runs changed otherwise
            return False
        ends = index.run_end
        resolution = max(state.config.scheduler.bf_resolution_s, 1) * 1000
        if ends and min(ends.values()) < now + resolution:
            return False  # a run due, overdue or being killed: the profile moves with time
        fifo, known = state.fifo(), self.fifo_len
        if len(fifo) < known or (known and fifo[known - 1] != self.fifo_last):
            return False  # (the queue changes only by the facts evolve lets through)
        if self.started:  # (dropped here, not when kept: most kept passes are not resumed)
            self._drop_started()
        jobs = state.jobs
        reasons = self.reason_of
        for p in self.changed:  # the facts of this pass were folded
            if reasons[p] and jobs[self.queue[p].job_sluid].reason != reasons[p]:
                return False
        new = [jobs[s] for _, _, s in fifo[known:]]
        plain, blocked = self.usage.plain_parts, self.blocked
        for job in new:
            spec = job.spec
            if (
                job.hold
                or spec.begin_time_ms > now
                or spec.dependency
                or job.array_job_sluid
                or job.partition not in plain
                or job.partition not in blocked
            ):
                return False
        self._walk_new(st, new)
        return True

    def _walk_new(self, st: Stamper, new: list[Job]) -> None:
        """The main pass and backfill for the new jobs, at the end of the queue."""
        self.st, self.now = st, st.time_ms
        self.fits_now.clear()
        self.fits_reserved.clear()
        self.facts = []
        self.changed = []
        waited = len(self.waiting)
        smallest = self.smallest_waiting
        priority = PendingReason.PRIORITY
        for job in new:
            position = len(self.queue)
            self.queue.append(job)
            self.reason_of.append(priority)
            self.waiting.append(position)
            if job.reason != priority:
                self.changed.append(position)
            smallest = min(smallest, job.demand.nodes_min)
        self.smallest_waiting = smallest
        self.prios = ones(len(self.queue))
        if self.state.config.scheduler.policy == "fcfs":
            return
        if smallest <= self.open_nodes:  # a job may fit (else the walk needs no profile):
            # a new profile of the runs as the state has them now (this pass's starts
            # included), on this pass's grid, with the reservations made before (the same)
            reservations = self.profile.reservations
            self.profile = self._profile()
            for start, end, slots in reservations:
                self.profile.reserve(start, end - start if end < INFINITE else INFINITE, slots)
        self.backfill_from(waited)

