"""``schedule(state, now_ms) -> facts``: one scheduling pass.

In order:

1. every run whose ``--signal`` warning is due (``start + time_limit - SECONDS ≤ now``) and
   was not sent gets ``RunSignalled(TIME_LIMIT)`` (:mod:`scheduler.jobs.signals`; also when the
   pass is carried on); then the advanced reservations whose end came end, their runs killed,
   and every run whose ``start + time_limit ≤ now`` and not yet being killed gets
   ``RunKillRequested(TIMEOUT)`` (:mod:`scheduler.scheduling.timeouts`);
2. the pending jobs are put in queue order (:mod:`scheduler.scheduling.priority`);
3. the **main pass** walks the queue: a job held back by a limit gets that reason
   (:mod:`scheduler.scheduling.limits`); a job of a partition that already has a blocked job waits
   with ``Priority``; any other job starts if it fits now, else it waits with ``Resources`` and
   blocks its partition (Slurm's main scheduler);
4. **backfill** (policy ``easy`` or ``conservative``) walks the jobs the main pass left waiting,
   up to ``bf_max_job_test``: a job starts now if it fits on nodes no reservation needs before
   it ends (by its time limit); otherwise it gets a reservation at its earliest start — only the
   first such job under EASY, every such job under conservative
   (:mod:`scheduler.scheduling.backfill` over :mod:`scheduler.scheduling.profile`'s profile);
5. a ``JobPending`` is recorded for every job whose pending reason changed.

Started jobs produce ``JobStarted``; a node's IDLE/MIXED/ALLOCATED state follows from the runs
on it and is not announced (see :mod:`scheduler.nodes.states`).
The pass works on scratch copies and never writes the state; the shell evolves the facts.
"""

from __future__ import annotations

import numpy as np

from scheduler.jobs.dependencies import killed_by_dependency
from scheduler.jobs.node_filter import allowed_slots
from scheduler.jobs.signals import time_limit_signals
from scheduler.records import Fact, JobPending, JobStarted, Segment
from scheduler.requeue.hotswap import Kept, protect_hot_swaps, try_hot_swap
from scheduler.reservations.windows import blocked_for, hold_wait, nodes_mask, reservation_wait
from scheduler.scheduling.backfill import Placed, Reservation
from scheduler.scheduling.carry import CarryStage
from scheduler.scheduling.free import Free
from scheduler.scheduling.licenses import LicenseLedger
from scheduler.scheduling.limits import PassUsage, waiting_reason
from scheduler.scheduling.partition_choice import RESV_KEY, PartitionChoice
from scheduler.scheduling.pass_result import PassResult
from scheduler.scheduling.placement import place_job
from scheduler.scheduling.priority import first_come_order, ordered_queue
from scheduler.scheduling.profile import INFINITE, Profile
from scheduler.scheduling.timeouts import due_kills, reasons_after
from scheduler.shard.index import BoolArray, IntArray
from scheduler.shard.model import Job
from scheduler.shard.reasons import PendingReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["PassResult", "Reservation", "schedule", "schedule_with_plan"]

_RESV = RESV_KEY  # an advanced reservation's name's prefix in the blocked set


def schedule(state: ShardState, now_ms: int) -> list[Fact]:
    """One pass: timeouts, queue order, main pass, backfill, reasons; facts in decision order."""
    return schedule_with_plan(state, now_ms, full_plan=False).facts


def schedule_with_plan(state: ShardState, now_ms: int, *, full_plan: bool = True) -> PassResult:
    """Like :func:`schedule`, also returning the backfill reservations it made.

    With ``full_plan`` the EASY reservation is computed even when no later job could use the
    room it leaves (``schedule`` skips it then; the facts are the same either way).
    """
    st = Stamper(state, now_ms)
    warnings = time_limit_signals(state, st)  # changes no resource: a carried pass stays valid
    carried = state.carried if not full_plan else None
    if isinstance(carried, _Pass) and carried.resume(st):
        return _with_warnings(warnings, _ended(carried, [], carry=True))
    facts = due_kills(state, st)
    if not facts and not state.pending:  # a whole pass would decide nothing, keep nothing
        state.carried = state.carried if full_plan else None
        return _with_warnings(warnings, PassResult([], {}, []))
    run = _Pass(state, st)
    run.main_pass()
    if state.config.scheduler.policy != "fcfs" and run.waiting:
        run.backfill()
        if full_plan:
            run.settle_heads()
    return _with_warnings(warnings, _ended(run, facts, carry=not full_plan))


def _with_warnings(warnings: list[Fact], result: PassResult) -> PassResult:
    """The pass's facts after its ``--signal`` warnings (stamped first, so first)."""
    if warnings:
        result.facts = warnings + result.facts
    return result


def _ended(run: _Pass, facts: list[Fact], *, carry: bool) -> PassResult:
    """The pass's result; the state keeps the pass if the next one may carry it on
    (:mod:`scheduler.scheduling.carry`)."""
    if hasattr(run, "profile"):
        run.profile.detach()  # no pass <-> profile cycle: the pass is freed when dropped
    result = PassResult(facts + run.facts + reasons_after(facts, run.reason_facts()),
                        run.reserved, run.backfilled)
    if carry:  # a pass with the full plan leaves the cache alone (the state is the same)
        keep = run.carriable(bool(facts))
        if keep:
            run.keep_queue()
        run.state.carried = run if keep else None
    return result


class _Pass(PartitionChoice, CarryStage):
    """The scratch state of one pass: free resources, usage, reasons, facts so far (the
    backfill stage's steps are :class:`~scheduler.scheduling.backfill.BackfillStage`'s)."""

    def __init__(self, state: ShardState, st: Stamper) -> None:
        self.state, self.st, self.now = state, st, st.time_ms
        self.index = state.index
        self.free = Free(self.index)
        self.usage = PassUsage(state)
        self.facts: list[Fact] = []
        self.queue: list[Job] = []
        self.prios: np.ndarray = np.zeros(0, dtype=np.int64)
        self.reason_of: list[str] = []  # parallel to queue; "" = started
        self.waiting: list[int] = []  # queue positions the main pass left waiting
        self.changed: list[int] = []  # queue positions whose reason may have changed
        self.smallest_waiting = INFINITE  # the fewest nodes a waiting job asks for
        self.started: list[tuple[Job, list[int], list[tuple[int, int, int]]]] = []
        self.reserved: dict[str, Reservation] = {}
        self.backfilled: list[tuple[str, int]] = []
        self.profile: Profile
        self.ledger: LicenseLedger | None = None  # built when a queued job asks for licenses
        self.heads: list[Job] = []  # EASY: blocked jobs owed the one reservation, deferred
        self.listed_tries: dict[str, tuple[Job, ...]] = {}  # -p a,b jobs backfill walks
        self._eligible: dict[tuple[object, ...], BoolArray] = {}
        # hot-swap jobs' protected nodes (scheduler.requeue.hotswap)
        self.kept: dict[str, Kept] = {}
        self.completing = self._completing_nodes()
        # the backfill walk's state, and what a later pass needs to carry this one on
        self.failed = {}
        self.unreservable = {}
        self.fits_now, self.fits_reserved = {}, {}
        self.bf_starts = self.open_nodes = 0
        self.reserve_missed = False
        self.blocked: set[str] = set()
        self.all_plain = True
        self.first_come = False
        self.fifo_len, self.fifo_last, self.runs_version = 0, None, 0
        self.started_sluids: list[str] = []

    def _completing_nodes(self) -> BoolArray | None:
        """Nodes a COMPLETING job still holds: no new work there (Slurm's _pick_best_nodes)."""
        if not self.state.completing:
            return None
        pos, jobs = self.index.pos, self.state.jobs
        mask = np.zeros(len(self.index), dtype=np.bool_)
        for sluid in self.state.completing:
            mask[[pos[n] for n in jobs[sluid].held if n in pos]] = True
        return mask

    def eligible(self, job: Job) -> BoolArray:
        """Usable nodes of the job's partition big enough for its per-node demand (cached)."""
        spec = job.spec
        restricted = spec.constraint or spec.nodelist or spec.exclude
        key: tuple[object, ...] = (job.partition, job.demand.shape)
        if restricted:
            key = (*key, spec.constraint, spec.nodelist, spec.exclude)
        reserved: tuple[str, ...] = ()
        if self.state.meta.reservations:  # the job's own, or those it must keep out of
            reserved = (spec.reservation,) if spec.reservation else blocked_for(
                self.state, job, self.now)
            key = (*key, bool(spec.reservation), reserved)
        mask = self._eligible.get(key)
        if mask is None:
            mask = self.free.eligible(job.demand, self.index.part_masks.get(job.partition))
            if self.completing is not None:
                mask = mask & ~self.completing
            if restricted:
                mask = mask & allowed_slots(self.state, self.index, spec)
            if reserved:
                inside = nodes_mask(self.state, self.index, reserved)
                mask = mask & (inside if spec.reservation else ~inside)
            self._eligible[key] = mask
        return mask

    def _prepare(self) -> None:
        """The queue in order, the license ledger and the hot swaps' kept nodes, if needed."""
        state = self.state
        self.first_come = first_come_order(state)
        self.queue, self.prios = ordered_queue(state, self.now)
        if state.asking_licenses:
            self.ledger = LicenseLedger(
                state.config,
                state.meta.config_texts.get("resources"),
                self.index.names,
                (state.jobs[s] for s in state.running),
            )
        if self.queue and self.queue[0].expediting:
            self.kept = protect_hot_swaps(
                state.config, self.queue, self.free, self.eligible, self.now
            )

    def main_pass(self) -> None:
        self._prepare()
        blocked = self.blocked
        state, usage, now, kept = self.state, self.usage, self.now, self.kept
        add_reason, add_waiting, add_changed = (self.reason_of.append, self.waiting.append,
                                                self.changed.append)
        smallest, plain = self.smallest_waiting, usage.plain_parts
        # with no QOS, MaxWall or account limit configured, waiting_reason's first test needs
        # only the job's own fields (the same test, inlined: it runs for every queued job)
        inline = not usage.qos and not usage.max_wall and not usage.assoc_limited
        # then, with no held, deferred, dependent or array job queued, the jobs after the last
        # partition to block all wait with Priority: filed at once (_file_priority_tail)
        whole_tail = inline and not kept and not state.conditional
        tail: list[Job] = []
        for position, job in enumerate(self.queue):
            spec = job.spec
            if "," in job.partition:  # -p a,b: the first of its partitions that starts it
                smallest = min(smallest, self.try_listed(job, position))
                continue
            if (
                inline
                and not job.hold
                and spec.begin_time_ms <= now
                and not spec.dependency
                and not job.array_job_sluid
                and not spec.reservation
                and job.partition in plain
            ):
                reason = ""
            else:
                self.all_plain = False
                reason = (hold_wait(job, reservation_wait(state, job, now))
                          if spec.reservation else "") or waiting_reason(state, job, usage, now)
            if not reason:
                if kept and job.job_sluid in kept:
                    reason = self._hot_swap(job, position)
                    add_reason(reason)
                    if reason:
                        add_changed(position)
                    continue
                # a job of a reservation blocks (and waits behind) its reservation's jobs only
                queue_key = _RESV + spec.reservation if spec.reservation else job.partition
                if queue_key in blocked:
                    reason = PendingReason.PRIORITY
                else:
                    placed = self.place(job, self.free.fits(job.demand, self.eligible(job)))
                    if not isinstance(placed, str):
                        self.start(job, *placed, priority=int(self.prios[position]))
                        add_reason("")
                        continue
                    reason = placed
                    if reason == PendingReason.LICENSES:  # counters, not nodes: no blocking
                        add_reason(reason)
                        add_changed(position)
                        continue
                    blocked.add(queue_key)
                    if whole_tail:
                        tail = self._blocked_tail(position + 1, blocked & plain)
                add_waiting(position)
                smallest = min(smallest, job.demand.nodes_min)
            add_reason(reason)
            if reason != job.reason:
                add_changed(position)
            if tail:
                smallest = min(smallest, self._file_priority_tail(position + 1, tail))
                break
        self.smallest_waiting = smallest

    def _blocked_tail(self, start: int, blocked: set[str]) -> list[Job]:
        """The queue from ``start`` on if every job there is of a ``blocked`` partition
        without limits (the caller knows none is held, deferred, dependent or an array task),
        so waits with Priority; else an empty list."""
        tail = self.queue[start:]
        return tail if {job.partition for job in tail} <= blocked else []

    def _file_priority_tail(self, start: int, tail: list[Job]) -> int:
        """File ``tail`` (the queue from ``start`` on) as waiting with Priority, as the main
        pass's loop would one job at a time; the fewest nodes one of them asks for."""
        priority = PendingReason.PRIORITY
        self.reason_of += [priority] * len(tail)
        self.waiting += range(start, start + len(tail))
        self.changed += [start + i for i, job in enumerate(tail) if job.reason != priority]
        return min([job.demand.nodes_min for job in tail])  # (a list: faster than a generator)

    def _hot_swap(self, job: Job, position: int) -> str:
        """Start a hot-swap job on its kept nodes plus replacements ("" = started)."""
        placed, kept = try_hot_swap(
            self.free, job, self.kept.pop(job.job_sluid), self.eligible(job)
        )
        if placed is not None:
            self.start(job, *placed, priority=int(self.prios[position]))
            return ""
        if kept is not None:
            self.kept[job.job_sluid] = kept
        return PendingReason.HOT_SWAP

    def place(self, job: Job, mask: BoolArray) -> Placed | str:
        """Nodes for ``job`` among ``mask``: the topology plugin's choice, or the first in
        node order without a topology; else the pending reason."""
        need = job.demand.nodes_min
        if int(np.count_nonzero(mask)) < need:
            return PendingReason.RESOURCES
        ledger = self._ledger_for(job)
        if ledger is not None:
            mask = ledger.mask(job, mask)
            if int(np.count_nonzero(mask)) < need:
                return PendingReason.LICENSES
        topology = self.index.topology_for(job.partition)
        choice = place_job(
            topology,
            job,
            mask,
            busy=self._busy,
            now_ms=self.now,
            fragmentation_aware=self.state.config.scheduler.fragmentation_aware,
            budget=ledger.budget(job, topology.nodes) if ledger is not None else None,
        )
        placed: Placed | str = choice if isinstance(choice, str) else choice[:2]
        if ledger is not None and not isinstance(placed, str):
            names = [self.index.names[i] for i in placed[0].tolist()]
            if not ledger.available(job, names):
                return PendingReason.LICENSES
        return placed

    def _busy(self) -> BoolArray:
        """The nodes running something now (in the pass's scratch copy)."""
        busy: BoolArray = self.free.njobs > 0
        return busy

    def _ledger_for(self, job: Job) -> LicenseLedger | None:
        asks = job.spec.licenses or job.spec.resources
        return self.ledger if asks else None

    def start(
        self, job: Job, slots: IntArray, segments: tuple[Segment, ...] = (), spread: bool = True,
        priority: int = 0,
    ) -> list[tuple[int, int, int]]:
        """Start ``job`` on ``slots`` (batch host first): its JobStarted, with the ``priority``
        it had in the queue. ``spread``: its tasks may spread unevenly (``Free.spread``; not in
        backfill, whose reservations counted the demand's share on each node)."""
        st, index, free = self.st, self.index, self.free
        shares = free.spread(slots, job.spec, job.demand) if spread else None
        alloc = free.take(slots, job.demand, shares)
        slot_list: list[int] = slots.tolist()
        names = tuple(map(index.names.__getitem__, slot_list))
        self.usage.add(job, alloc, names)
        self.started.append((job, slot_list, alloc))
        ledger = self._ledger_for(job)
        if ledger is not None:
            ledger.take(job, list(names))
        # the per-node (cpus, mem, gpus) of ``alloc`` as three columns (a job has a node)
        cpus, mem, gpus = zip(*alloc, strict=True) if alloc else ((), (), ())
        self.facts.append(
            JobStarted(
                **st.meta(),
                job_sluid=job.job_sluid,
                job_id=job.job_id,
                run_sluid=st.new_sluid(),
                restart_count=job.restart_count + (1 if job.run_sluid else 0),
                nodes=names,
                node_sluids=tuple(map(index.sluids.__getitem__, slot_list)),
                segments=segments,
                partition=job.partition,
                user=job.spec.user,
                time_limit_s=job.time_limit_s,
                submit_ms=job.submit_ms,
                alloc_cpus=cpus,
                alloc_mem_mb=mem,
                alloc_gpus=gpus,
                priority=priority,
            )
        )
        return alloc

    def reason_facts(self) -> list[Fact]:
        st, queue, reasons = self.st, self.queue, self.reason_of
        changed = [  # positions whose reason may differ (the main pass and backfill note them)
            p
            for p in sorted(set(self.changed))
            if reasons[p] and reasons[p] != queue[p].reason
        ]
        first_come = self.first_come or not changed  # every priority is 1: no array lookup
        prios = [1] * len(changed) if first_come else self.prios[changed].tolist()
        return [
            killed_by_dependency(st.meta(), queue[p])
            if reasons[p] == PendingReason.DEPENDENCY_NEVER_SATISFIED
            and queue[p].spec.kill_on_invalid_dep
            else JobPending(
                **st.meta(),
                job_sluid=self.queue[p].job_sluid,
                reason=self.reason_of[p],
                # a job of a deleted reservation is held: priority 0, as Slurm's
                priority=0 if self.reason_of[p] == PendingReason.RESERVATION_DELETED else prio,
            )
            for p, prio in zip(changed, prios, strict=True)
        ]

