"""``schedule(state, now_ms) -> facts``: one scheduling pass.

In order:

1. every run whose ``start + time_limit ≤ now`` and not yet being killed gets
   ``RunKillRequested(TIMEOUT)`` (by deadline, then job id);
2. the pending jobs are put in queue order (:mod:`scheduler.priority`);
3. the **main pass** walks the queue: a job held back by a limit gets that reason
   (:mod:`scheduler.limits`); a job of a partition that already has a blocked job waits with
   ``Priority``; any other job starts if it fits now, else it waits with ``Resources`` and blocks
   its partition (Slurm's main scheduler);
4. **backfill** (policy ``easy`` or ``conservative``) walks the jobs the main pass left waiting,
   up to ``bf_max_job_test``: a job starts now if it fits on nodes no reservation needs before
   it ends (by its time limit); otherwise it gets a reservation at its earliest start — only the
   first such job under EASY, every such job under conservative (:mod:`scheduler.backfill`);
5. a ``JobPending`` is recorded for every job whose pending reason changed.

Started jobs produce ``JobStarted``; a node's IDLE/MIXED/ALLOCATED state follows from the runs
on it and is not announced (see :mod:`scheduler.node_states`).
The pass works on scratch copies and never writes the state; the shell evolves the facts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scheduler.backfill import INFINITE, FailureFrontier, Profile, ReleaseEvents
from scheduler.facts import Fact, JobPending, JobStarted, RunKillRequested
from scheduler.hotswap import Kept, protect_hot_swaps, try_hot_swap
from scheduler.index import BoolArray, IntArray
from scheduler.licenses import LicenseLedger
from scheduler.limits import PassUsage, running_reason, waiting_reason
from scheduler.model import Job
from scheduler.placement import Free, choose_nodes
from scheduler.priority import ordered_queue
from scheduler.reasons import JobState, PendingReason
from scheduler.reserve_topology import earliest_topology_start
from scheduler.spec import Segment
from scheduler.stamp import Stamper
from scheduler.state import ShardState
from scheduler.topology import TopologyIndex
from scheduler.topology_glue import place_job

Placed = tuple[IntArray, tuple[Segment, ...]]
"""Chosen node slots (batch host first) and the allocation's segments."""

__all__ = ["PassResult", "Reservation", "schedule", "schedule_with_plan"]


def schedule(state: ShardState, now_ms: int) -> list[Fact]:
    """One pass: timeouts, queue order, main pass, backfill, reasons; facts in decision order."""
    return schedule_with_plan(state, now_ms, full_plan=False).facts


@dataclass(frozen=True, slots=True)
class Reservation:
    """A backfill reservation: the job may start at ``start_ms`` on ``nodes``."""

    start_ms: int
    end_ms: int  # INFINITE for a job without a time limit
    nodes: tuple[str, ...]  # on a topology: the plugin's choice, in rank order
    blocked: tuple[str, ...] = ()  # a topo-exclusive job's other unit nodes, held as well


class PassResult:
    """A pass's facts plus what it planned, for the simulator and tests."""

    def __init__(
        self,
        facts: list[Fact],
        reservations: dict[str, Reservation],
        backfilled: list[tuple[str, int]],
    ) -> None:
        self.facts = facts
        self.reservations = reservations  # job SLUID → its reservation
        # (job SLUID, how many reservations existed when backfill started it), in order;
        # ``reservations`` keeps creation order, so those are its first entries
        self.backfilled = backfilled

    @property
    def reserved_starts(self) -> dict[str, int]:
        """Job SLUID → reserved start (ms)."""
        return {job: r.start_ms for job, r in self.reservations.items()}


def schedule_with_plan(state: ShardState, now_ms: int, *, full_plan: bool = True) -> PassResult:
    """Like :func:`schedule`, also returning the backfill reservations it made.

    With ``full_plan`` the EASY reservation is computed even when no later job could use the
    room it leaves (``schedule`` skips it then; the facts are the same either way).
    """
    st = Stamper(state, now_ms)
    facts = _timeouts(state, st)
    run = _Pass(state, st)
    run.main_pass()
    if state.config.scheduler.policy != "fcfs" and run.waiting:
        run.backfill()
        if full_plan:
            run.settle_heads()
        run.profile.detach()  # no pass <-> profile cycle: the pass is freed when it returns
    return PassResult(facts + run.facts + run.reason_facts(), run.reserved, run.backfilled)


def _timeouts(state: ShardState, st: Stamper) -> list[Fact]:
    """Runs past their limit and not being killed: the index's raw ends (see ``raw_end``) are
    start + limit for exactly those runs (0 for a kill, INFINITE without a limit)."""
    now, jobs = st.time_ms, state.jobs
    due = [jobs[s] for s, end in state.index.run_end.items() if 0 < end <= now]
    due.sort(key=lambda j: (j.start_ms + j.time_limit_s * 1000, j.job_id))
    return [
        RunKillRequested(
            **st.meta(),
            job_sluid=j.job_sluid,
            run_sluid=j.run_sluid,
            reason=JobState.TIMEOUT,
            nodes=j.nodes,
        )
        for j in due
    ]


def _duration_ms(job: Job) -> int:
    return job.time_limit_s * 1000 if job.time_limit_s > 0 else INFINITE


class _Pass:
    """The scratch state of one pass: free resources, usage, reasons, facts so far."""

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
        self._eligible: dict[tuple[str, tuple[int, int, int, str, bool]], BoolArray] = {}
        self.kept: dict[str, Kept] = {}  # hot-swap jobs' protected nodes (scheduler.hotswap)
        self.completing = self._completing_nodes()

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
        key = (job.partition, job.demand.shape)
        mask = self._eligible.get(key)
        if mask is None:
            mask = self.free.eligible(job.demand, self.index.part_masks.get(job.partition))
            if self.completing is not None:
                mask = mask & ~self.completing
            self._eligible[key] = mask
        return mask

    def main_pass(self) -> None:
        blocked: set[str] = set()
        self.queue, self.prios = ordered_queue(self.state, self.now)
        if self.state.asking_licenses:
            state = self.state
            self.ledger = LicenseLedger(
                state.config,
                state.meta.config_texts.get("resources"),
                self.index.names,
                (state.jobs[s] for s in state.running),
            )
        if self.queue and self.queue[0].expediting:
            self.kept = protect_hot_swaps(
                self.state.config, self.queue, self.free, self.eligible, self.now
            )
        state, usage, now, kept = self.state, self.usage, self.now, self.kept
        add_reason, add_waiting = self.reason_of.append, self.waiting.append
        add_changed = self.changed.append
        smallest = self.smallest_waiting
        plain = usage.plain_parts
        # with no QOS, MaxWall or account limit configured, waiting_reason's first test needs
        # only the job's own fields (the same test, inlined: it runs for every queued job)
        inline = not usage.qos and not usage.max_wall and not usage.assoc_limited
        for position, job in enumerate(self.queue):
            spec = job.spec
            if (
                inline
                and not job.hold
                and spec.begin_time_ms <= now
                and not spec.dependency
                and not job.array_job_sluid
                and job.partition in plain
            ):
                reason = ""
            else:
                reason = waiting_reason(state, job, usage, now)
            if not reason:
                if kept and job.job_sluid in kept:
                    reason = self._hot_swap(job)
                    add_reason(reason)
                    if reason:
                        add_changed(position)
                    continue
                if job.partition in blocked:
                    reason = PendingReason.PRIORITY
                else:
                    placed = self.place(job, self.free.fits(job.demand, self.eligible(job)))
                    if not isinstance(placed, str):
                        self.start(job, *placed)
                        add_reason("")
                        continue
                    reason = placed
                    if reason == PendingReason.LICENSES:  # counters, not nodes: no blocking
                        add_reason(reason)
                        add_changed(position)
                        continue
                    blocked.add(job.partition)
                add_waiting(position)
                smallest = min(smallest, job.demand.nodes_min)
            add_reason(reason)
            if reason != job.reason:
                add_changed(position)
        self.smallest_waiting = smallest

    def _hot_swap(self, job: Job) -> str:
        """Start a hot-swap job on its kept nodes plus replacements ("" = started)."""
        placed, kept = try_hot_swap(
            self.free, job, self.kept.pop(job.job_sluid), self.eligible(job)
        )
        if placed is not None:
            self.start(job, *placed)
            return ""
        if kept is not None:
            self.kept[job.job_sluid] = kept
        return PendingReason.HOT_SWAP

    def backfill(self) -> None:
        """Start what fits without delaying reservations; reserve for what does not.

        Under EASY the first blocked job's reservation is computed only when a later job could
        fit now at all (the same decisions as computing it first, at less cost: when nothing
        fits, it cannot matter).
        """
        config = self.state.config.scheduler
        self.profile = self._profile()
        failed: dict[tuple[str, tuple[int, int, int, str, bool], str, str], FailureFrontier] = {}
        starts, open_nodes = 0, self._open_nodes()
        easy = config.policy == "easy"
        if easy and not self.started and self.smallest_waiting > open_nodes:
            # no waiting job fits in the nodes with room and none can hit a limit: the loop
            # below would only collect the jobs owed the reservation
            if open_nodes:
                self.heads = [self.queue[p] for p in self.waiting[: config.bf_max_job_test]]
            return
        for tested, position in enumerate(self.waiting):
            if tested >= config.bf_max_job_test or (easy and not open_nodes):
                break  # EASY: no node has room, so no job can start and its reservation is moot
            job = self.queue[position]
            if self.started:  # jobs started in this pass may have reached a limit
                held = running_reason(self.state, job, self.usage)
                if held:
                    self.reason_of[position] = held  # Slurm's backfill names the limit too
                    self.changed.append(position)
                    continue
            demand = job.demand
            duration = job.time_limit_s * 1000 if job.time_limit_s > 0 else INFINITE
            if demand.nodes_min <= open_nodes and (
                not config.bf_max_job_start or starts < config.bf_max_job_start
            ):  # it might fit now: unless a job of its shape that was no bigger failed
                shape = (job.partition, demand.shape, job.spec.licenses, job.spec.resources)
                tried = failed.get(shape)
                if tried is None:
                    tried = failed[shape] = FailureFrontier()
                if not tried.dominated(demand.nodes_min, duration):
                    placed = self._backfill_place(job, duration)
                    if placed is not None:
                        self._backfill_start(job, position, placed)
                        # its nodes had room (so counted); those it filled have none now
                        filled = int(np.count_nonzero(self.free.cpus[placed[0]] <= 0))
                        starts, open_nodes = starts + 1, open_nodes - filled
                        continue
                    tried.add(demand.nodes_min, duration)
            if not easy:
                self._reserve(job, duration)
            elif not self.reserved:
                self.heads.append(job)

    def settle_heads(self) -> None:
        """EASY: make the deferred reservation now, trying the owed jobs in queue order.

        No job started since they were deferred, so each attempt sees the profile it would
        have seen at its place in the queue: the decisions equal reserving eagerly.
        """
        while self.heads and not self.reserved:
            job = self.heads.pop(0)
            self._reserve(job, _duration_ms(job))
        if self.reserved:
            self.heads.clear()

    def _backfill_start(self, job: Job, position: int, placed: Placed) -> None:
        alloc = self.start(job, *placed)
        if self.profile.loaded:  # else the loader adds it with the pass's starts
            end = self.profile.expected_end(self.now, job.time_limit_s, killing=False)
            self.profile.add_run(placed[0], alloc, end)
        self.reason_of[position] = ""
        self.backfilled.append((job.job_sluid, len(self.reserved)))

    def _reserve(self, job: Job, duration: int) -> None:
        """Reserve the job's earliest start (within the window), whole nodes; on a topology,
        where and when the plugin would place it (:mod:`scheduler.reserve_topology`)."""
        window = self.now + self.state.config.scheduler.bf_window_s * 1000
        topology = self.index.topology_for(job.partition)
        if topology is not None:
            self._reserve_on(topology, job, duration, window)
            return
        found = self.profile.earliest_start(job.demand, self.eligible(job), duration)
        if found is not None and found[0] <= window:
            self.profile.reserve(found[0], duration, found[1])
            end = INFINITE if duration >= INFINITE else found[0] + duration
            names = tuple(self.index.names[i] for i in found[1].tolist())
            self.reserved[job.job_sluid] = Reservation(found[0], end, names)

    def _reserve_on(self, topology: TopologyIndex, job: Job, duration: int, window: int) -> None:
        """The reservation the topology plugin would give ``job`` (its nodes, plus for a
        topo-exclusive job the rest of its units, are held)."""
        found = earliest_topology_start(
            self.profile,
            topology,
            job,
            self.eligible(job),
            duration,
            window,
            self.state.config.scheduler.fragmentation_aware,
        )
        if found is None:
            return
        held = np.union1d(found.slots, found.blocked) if len(found.blocked) else found.slots
        self.profile.reserve(found.start_ms, duration, held)
        end = INFINITE if duration >= INFINITE else found.start_ms + duration
        names = self.index.names
        self.reserved[job.job_sluid] = Reservation(
            found.start_ms,
            end,
            tuple(names[i] for i in found.slots.tolist()),
            tuple(names[i] for i in found.blocked.tolist()),
        )

    def _open_nodes(self) -> int:
        """How many usable nodes have a free CPU (an upper bound on any job's node count)."""
        return int(np.count_nonzero((self.free.cpus > 0) & self.index.usable))

    def _profile(self) -> Profile:
        resolution = self.state.config.scheduler.bf_resolution_s
        return Profile(self.free, self.now, resolution, self._load_runs)

    def _load_runs(self, profile: Profile) -> None:
        """Add the running jobs (and those started so far in the pass) to the profile."""
        single = self.index.single_run_ends()
        if single is not None:
            profile.set_single(single.copy(), self._release_events)
        else:
            profile.set_base(self._release_events())
        for job, slot_list, alloc_list in self.started:
            end = profile.expected_end(self.now, job.time_limit_s, killing=False)
            profile.add_run(np.array(slot_list, dtype=np.int64), alloc_list, end)

    def _release_events(self) -> ReleaseEvents:
        """The running jobs' release events (kept in the index until the runs change)."""
        index = self.index
        base = index.release_cache
        if not isinstance(base, ReleaseEvents):
            names, owner, slots, alloc = index.run_rows()
            ends = np.array([index.run_end[s] for s in names], dtype=np.int64)
            base = index.release_cache = ReleaseEvents(slots, alloc, ends[owner])
        return base

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
        if topology is None:
            slots = choose_nodes(mask, job.demand)
            placed: Placed | str = (slots, ()) if slots is not None else PendingReason.RESOURCES
        else:
            placed = place_job(
                topology,
                job,
                mask,
                busy=self.free.njobs > 0,
                now_ms=self.now,
                fragmentation_aware=self.state.config.scheduler.fragmentation_aware,
                budget=ledger.budget(job, topology.nodes) if ledger is not None else None,
            )
        if ledger is not None and not isinstance(placed, str):
            names = [self.index.names[i] for i in placed[0].tolist()]
            if not ledger.available(job, names):
                return PendingReason.LICENSES
        return placed

    def _ledger_for(self, job: Job) -> LicenseLedger | None:
        asks = job.spec.licenses or job.spec.resources
        return self.ledger if asks else None

    def _backfill_place(self, job: Job, duration: int) -> Placed | None:
        """Nodes where ``job`` can start now and end before any reservation on them
        (nodes no reservation needs come first)."""
        fits = self.free.fits(job.demand, self.eligible(job))
        if int(np.count_nonzero(fits)) < job.demand.nodes_min:
            return None
        self.settle_heads()
        if self._ledger_for(job) is not None:  # the general path checks the counters
            placed = self.place(
                job,
                fits
                & self.profile.free_until(self.now + duration if duration < INFINITE else INFINITE),
            )
            return None if isinstance(placed, str) else placed
        profile = self.profile
        ok = fits & profile.free_until(self.now + duration if duration < INFINITE else INFINITE)
        if int(np.count_nonzero(ok)) < job.demand.nodes_min:
            return None
        if self.index.topology_for(job.partition) is not None:
            placed = self.place(job, ok)
            return None if isinstance(placed, str) else placed
        unreserved = ok & (profile.first_reserved >= INFINITE)
        ordered = np.concatenate((np.flatnonzero(unreserved), np.flatnonzero(ok & ~unreserved)))
        return np.sort(ordered[: job.demand.nodes_max]), ()

    def start(
        self, job: Job, slots: IntArray, segments: tuple[Segment, ...] = ()
    ) -> list[tuple[int, int, int]]:
        """Start ``job`` on ``slots`` (batch host first): its JobStarted."""
        st, index, free = self.st, self.index, self.free
        alloc = free.take(slots, job.demand)
        slot_list: list[int] = slots.tolist()
        names = tuple(index.names[i] for i in slot_list)
        self.usage.add(job, alloc, names)
        self.started.append((job, slot_list, alloc))
        ledger = self._ledger_for(job)
        if ledger is not None:
            ledger.take(job, list(names))
        self.facts.append(
            JobStarted(
                **st.meta(),
                job_sluid=job.job_sluid,
                job_id=job.job_id,
                run_sluid=st.new_sluid(),
                restart_count=job.restart_count + (1 if job.run_sluid else 0),
                nodes=names,
                node_sluids=tuple(index.sluids[i] for i in slot_list),
                segments=segments,
                partition=job.partition,
                user=job.spec.user,
                time_limit_s=job.time_limit_s,
                submit_ms=job.submit_ms,
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
        prios = self.prios[changed].tolist() if changed else []
        return [
            JobPending(
                **st.meta(),
                job_sluid=self.queue[p].job_sluid,
                reason=self.reason_of[p],
                priority=prio,
            )
            for p, prio in zip(changed, prios, strict=True)
        ]
