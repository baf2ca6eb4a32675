"""The backfill stage of a scheduling pass (:mod:`scheduler.schedule`, step 4).

:class:`BackfillStage` holds the pass's backfill steps: walk the jobs the main pass left
waiting (up to ``bf_max_job_test``), start a job now where it fits on nodes no reservation
needs before it ends (:mod:`scheduler.scheduling.profile`'s profile), else reserve its earliest
start — only the first such job under EASY (deferred until a later job could fit at all), every such
job under conservative; a ``-p a,b`` job over each of its partitions
(:mod:`scheduler.scheduling.partition_choice`). On a topology other than flat the reservation is
the plugin's (:mod:`scheduler.scheduling.reserve_topology`). The pass
(``scheduler.schedule._Pass``) supplies the scratch state declared here and the placement steps
(``eligible``, ``place``, ``start``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scheduler.records import Segment
from scheduler.records.fast_init import fast_init
from scheduler.scheduling.free import Free
from scheduler.scheduling.licenses import LicenseLedger
from scheduler.scheduling.limits import PassUsage, running_reason
from scheduler.scheduling.profile import INFINITE, FailureFrontier, Profile, ReleaseEvents
from scheduler.scheduling.reserve_topology import earliest_topology_start
from scheduler.shard.index import BoolArray, IntArray, NodeIndex
from scheduler.shard.model import Job
from scheduler.shard.state import ShardState
from scheduler.topology import FlatIndex, TopologyIndex
from scheduler.topology.flat import rank

__all__ = ["BackfillStage", "Placed", "Reservation"]

Placed = tuple[IntArray, tuple[Segment, ...]]
"""Chosen node slots (batch host first) and the allocation's segments."""


@fast_init
@dataclass(frozen=True, slots=True)
class Reservation:
    """A backfill reservation: the job may start at ``start_ms`` on ``nodes``."""

    start_ms: int
    end_ms: int  # INFINITE for a job without a time limit
    nodes: tuple[str, ...]  # on a topology: the plugin's choice, in rank order
    blocked: tuple[str, ...] = ()  # a topo-exclusive job's other unit nodes, held as well


def _duration_ms(job: Job) -> int:
    return job.time_limit_s * 1000 if job.time_limit_s > 0 else INFINITE


class BackfillStage:
    """The backfill steps of one pass, over the pass's scratch state."""

    state: ShardState
    index: NodeIndex
    free: Free
    usage: PassUsage
    now: int
    queue: list[Job]
    prios: np.ndarray  # parallel to queue
    reason_of: list[str]
    waiting: list[int]
    changed: list[int]
    smallest_waiting: int
    started: list[tuple[Job, list[int], list[tuple[int, int, int]]]]
    reserved: dict[str, Reservation]
    backfilled: list[tuple[str, int]]
    profile: Profile
    heads: list[Job]
    # the walk's own state, kept on the pass so that a carried pass can walk on
    failed: dict[tuple[int, tuple[int, int, int, str, bool], str, str], FailureFrontier]
    bf_starts: int  # jobs backfill started
    open_nodes: int  # usable nodes with a free CPU
    reserve_missed: bool  # a reservation was sought and not made (never, or past the window)
    # per (eligible mask, per-node shape): the (nodes, duration) sizes whose reservation was
    # sought and not made in this pass (see ``_reserve``)
    unreservable: dict[tuple[int, tuple[int, int, int, str, bool]], FailureFrontier]
    # per (eligible mask, per-node shape): the nodes that fit now and how many; the sorted
    # first reservations on them (dropped when a job starts, or a reservation is made)
    fits_now: dict[tuple[int, tuple[int, int, int, str, bool]], tuple[BoolArray, int]]
    fits_reserved: dict[tuple[int, tuple[int, int, int, str, bool]], IntArray]

    def eligible(self, job: Job) -> BoolArray:
        """The pass's: nodes that could ever host ``job`` (see ``scheduler.schedule``)."""
        raise NotImplementedError

    def place(self, job: Job, mask: BoolArray) -> Placed | str:
        """The pass's: the plugin's nodes for ``job`` among ``mask``, or the pending reason."""
        raise NotImplementedError

    def start(
        self, job: Job, slots: IntArray, segments: tuple[Segment, ...] = (), spread: bool = True,
        priority: int = 0,
    ) -> list[tuple[int, int, int]]:
        """The pass's: start ``job`` on ``slots``; what each slot gave."""
        raise NotImplementedError

    def _ledger_for(self, job: Job) -> LicenseLedger | None:
        raise NotImplementedError

    def backfill_listed(self, job: Job, position: int, easy: bool) -> None:
        """The pass's (:mod:`scheduler.scheduling.partition_choice`): a ``-p a,b`` job's step."""
        raise NotImplementedError

    def reserve_listed(self, job: Job, duration: int, window: int = -1) -> None:
        """The pass's: reserve a ``-p a,b`` job over its partitions."""
        raise NotImplementedError

    def backfill(self) -> None:
        """Start what fits without delaying reservations; reserve for what does not.

        Under EASY the first blocked job's reservation is computed only when a later job could
        fit now at all (the same decisions as computing it first, at less cost: when nothing
        fits, it cannot matter).
        """
        self.profile = self._profile()
        self.failed = {}
        self.unreservable = {}
        self.fits_now, self.fits_reserved = {}, {}
        self.bf_starts, self.open_nodes = 0, self._open_nodes()
        self.backfill_from(0)

    def backfill_from(self, first: int) -> None:
        """The backfill walk from the ``first``-th waiting job on (0: the whole walk; more: a
        carried pass walking the jobs that joined the queue, :mod:`scheduler.scheduling.carry`)."""
        config = self.state.config.scheduler
        failed, starts, open_nodes = self.failed, self.bf_starts, self.open_nodes
        easy = config.policy == "easy"
        if easy and not self.started and self.smallest_waiting > open_nodes:
            # no waiting job fits in the nodes with room and none can hit a limit: the loop
            # below would only collect the jobs owed the reservation
            if open_nodes:
                self.heads += [self.queue[p] for p in self.waiting[first : config.bf_max_job_test]]
            return
        waiting = self.waiting
        for tested in range(first, len(waiting)):
            if tested >= config.bf_max_job_test or (easy and not open_nodes):
                break  # EASY: no node has room, so no job can start and its reservation is moot
            position = waiting[tested]
            job = self.queue[position]
            if "," in job.partition:  # -p a,b: each of its partitions in turn
                self.backfill_listed(job, position, easy)
                starts, open_nodes = self.bf_starts, self.open_nodes
                continue
            if self.started:  # jobs started in this pass may have reached a limit
                held = running_reason(self.state, job, self.usage, self.now)
                if held:
                    self.reason_of[position] = held  # Slurm's backfill names the limit too
                    self.changed.append(position)
                    continue
            demand = job.demand
            duration = job.time_limit_s * 1000 if job.time_limit_s > 0 else INFINITE
            if demand.nodes_min <= open_nodes and (
                not config.bf_max_job_start or starts < config.bf_max_job_start
            ):  # it might fit now: unless a job of its shape that was no bigger failed
                # on the same nodes (its eligible mask: partition, -C, -w and -x; a job pinned
                # to a DOWN node says nothing of one that may run anywhere)
                shape = (id(self.eligible(job)), demand.shape, job.spec.licenses,
                         job.spec.resources)
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
                        self.bf_starts, self.open_nodes = starts, open_nodes
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
        alloc = self.start(job, *placed, spread=False, priority=int(self.prios[position]))
        self.fits_now.clear()  # the free resources changed
        self.fits_reserved.clear()
        if self.profile.loaded:  # else the loader adds it with the pass's starts
            end = self.profile.expected_end(self.now, job.time_limit_s, killing=False)
            self.profile.add_run(placed[0], alloc, end)
        self.reason_of[position] = ""
        self.backfilled.append((job.job_sluid, len(self.reserved)))

    def _reserve(self, job: Job, duration: int) -> None:
        """Reserve the job's earliest start (within the window), whole nodes; on a topology,
        where and when the plugin would place it (:mod:`scheduler.scheduling.reserve_topology`)."""
        if "," in job.partition:  # -p a,b: over its partitions
            self.reserve_listed(job, duration)
            return
        window = self.now + self.state.config.scheduler.bf_window_s * 1000
        topology = self.index.topology_for(job.partition)
        if not isinstance(topology, FlatIndex):
            self._reserve_on(topology, job, duration, window)
            return
        # Within a pass the profile only fills up (starts, reservations), so a job of the same
        # per-node shape on the same nodes needing at least as many of them for at least as
        # long as one that found no start within the window finds none either: it is not
        # sought again (conservative: a queue behind nodes that never free asked once a shape,
        # not once a job)
        eligible = self.eligible(job)
        key = (id(eligible), job.demand.shape)  # the pass keeps its masks: ids are not reused
        missed = self.unreservable.get(key)
        if missed is not None and missed.dominated(job.demand.nodes_min, duration):
            self.reserve_missed = True
            return
        found = self.profile.earliest_start(job.demand, eligible, duration)
        if found is None or found[0] > window:
            self.reserve_missed = True
            if missed is None:
                missed = self.unreservable[key] = FailureFrontier()
            missed.add(job.demand.nodes_min, duration)
        else:
            self.profile.reserve(found[0], duration, found[1])
            self.fits_reserved.clear()
            end = INFINITE if duration >= INFINITE else found[0] + duration
            names = tuple(map(self.index.names.__getitem__, found[1].tolist()))
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
            self.reserve_missed = True
            return
        held = np.union1d(found.slots, found.blocked) if len(found.blocked) else found.slots
        self.profile.reserve(found.start_ms, duration, held)
        self.fits_reserved.clear()
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
            profile.set_single(single, self._release_events)  # (read, not kept)
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

    def _backfill_place(self, job: Job, duration: int) -> Placed | None:
        """Nodes where ``job`` can start now and end before any reservation on them
        (nodes no reservation needs come first)."""
        need = job.demand.nodes_min
        eligible = self.eligible(job)
        key = (id(eligible), job.demand.shape)
        fits_now = self.fits_now.get(key)
        if fits_now is None:
            fits = self.free.fits(job.demand, eligible)
            fits_now = self.fits_now[key] = (fits, int(np.count_nonzero(fits)))
        fits, count = fits_now
        if count < need:
            return None
        self.settle_heads()
        until = self.now + duration if duration < INFINITE else INFINITE
        if self._ledger_for(job) is not None:  # the general path checks the counters
            placed = self.place(job, fits & self.profile.free_until(until))
            return None if isinstance(placed, str) else placed
        profile = self.profile
        # how many of those nodes no reservation needs before ``until``: their first
        # reservations, sorted once per shape (until a start or a reservation changes them)
        firsts = self.fits_reserved.get(key)
        if firsts is None:
            firsts = self.fits_reserved[key] = profile.first_reserved[fits]  # a copy
            firsts.sort()
        if len(firsts) - int(firsts.searchsorted(until)) < need:
            return None
        ok = fits & profile.free_until(until)
        topology = self.index.topology_for(job.partition)
        if not isinstance(topology, FlatIndex):
            placed = self.place(job, ok)
            return None if isinstance(placed, str) else placed
        # flat: the nodes no reservation needs first, then in node order; ranked by the plugin
        unreserved = ok & (profile.first_reserved >= INFINITE)
        # (ndarray methods rather than numpy's module functions: the same results without
        # their Python wrappers, on the hot path of every backfill start)
        ordered = np.concatenate((unreserved.nonzero()[0], (ok & ~unreserved).nonzero()[0]))
        taken = ordered[: job.demand.nodes_max]  # a view of ``ordered``, which is ours
        taken.sort()
        return rank(topology, taken), ()
