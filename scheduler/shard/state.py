"""The shard state: jobs, nodes, the node index and the shard's counters.

Only :func:`scheduler.evolve` writes it (in place, for speed: a scheduling pass over 50,000 jobs
cannot copy dicts per fact). Replaying the same facts from :func:`initial_state` gives the same
state, and :func:`restore_state` rebuilds the same state from the rows the shell persisted:

- ``state.jobs`` (by job SLUID) and ``state.nodes`` (by node SLUID) are the table rows; a batch
  changes exactly the rows its facts name (``job_sluid``, ``node_sluid``), and after a
  ``CycleCompleted`` the jobs in ``state.purged_jobs`` are gone (delete their rows);
- :func:`state_meta` is everything else, a small picklable :class:`ShardMeta`.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from scheduler.config.cluster import DEFAULT_CONFIG, ClusterConfig
from scheduler.jobs.retention import KnownSluids
from scheduler.reservations.model import Reservation
from scheduler.shard.index import NodeIndex, build_index
from scheduler.shard.model import Job, Node, held_view
from schemas.sluid import SluidClock

__all__ = ["ShardMeta", "ShardState", "initial_state", "node_rows_changed", "restore_state",
           "state_meta"]


@dataclass(slots=True)
class ShardMeta:
    """The shard's scalars and small structures: persisted once per batch."""

    shard: str
    cluster_id: int
    config: ClusterConfig
    config_texts: dict[str, str] = field(default_factory=dict)  # kind → applied text
    shard_seq: int = 0
    last_sluid: str = ""  # the greatest SLUID this shard minted (its clock, in text form)
    now_ms: int = 0
    next_job_id: int = 1
    inbox_offset: int = -1
    started_in_cycle: int = 0
    known: KnownSluids = field(default_factory=KnownSluids)
    usage: dict[str, float] = field(default_factory=dict)  # fair-share usage by account/user
    usage_ms: int = 0  # when usage was last decayed
    purged_jobs: tuple[str, ...] = ()
    # running jobs are charged up to max(start, this) (scheduler.scheduling.fairshare)
    accrued_ms: int = 0
    cycle_ms: int = 0  # time of the last CycleCompleted (scheduler.cycle: the idle close)
    # nodes whose registration was refused (scheduler.nodes.registration_requests)
    refused_nodes: tuple[str, ...] = ()
    # the shard's last squeue --start plan (StartsPlanned): its time and event SLUID
    # (scheduler.jobs.starts: a request within 10 s reuses it)
    starts_ms: int = 0
    starts_sluid: str = ""
    # the shard's last sprio answer (PrioritiesComputed), likewise (scheduler.jobs.priorities_plan)
    priorities_ms: int = 0
    priorities_sluid: str = ""
    # the shard's last sshare answer (SharesComputed), likewise (scheduler.jobs.shares_plan)
    shares_ms: int = 0
    shares_sluid: str = ""
    # the advanced reservations by name (scheduler.reservations), as their last ReservationSet
    reservations: dict[str, Reservation] = field(default_factory=dict)


class ShardState:
    """One shard's state. Read freely; write only through :func:`scheduler.evolve`."""

    __slots__ = (
        "_fifo",
        "_index",
        "active_by_account",
        "active_by_account_user",
        "active_by_user",
        "arrays",
        "asking_licenses",
        "carried",
        "completing",
        "conditional",
        "ended",
        "job_by_id",
        "jobs",
        "meta",
        "node_by_name",
        "nodes",
        "out_of_order",
        "pending",
        "running",
        "signalling",
    )

    def __init__(self, meta: ShardMeta, jobs: dict[str, Job], nodes: dict[str, Node]) -> None:
        self.meta = meta
        self.jobs = jobs
        self.nodes = nodes
        self.node_by_name = {n.name: s for s, n in nodes.items() if not n.superseded}
        self.pending: dict[str, None] = {}
        self.running: dict[str, None] = {}
        self.completing: dict[str, None] = {}  # requeues waiting for epilogs
        self.ended: dict[str, None] = {}
        self.active_by_user: dict[tuple[str, str], int] = {}
        self.active_by_account: dict[str, int] = {}  # association submit limits
        self.active_by_account_user: dict[tuple[str, str], int] = {}
        self.arrays: dict[str, list[str]] = {}  # array SLUID → its tasks' job SLUIDs
        self.job_by_id = {job.job_id: sluid for sluid, job in jobs.items()}
        self._fifo: list[tuple[int, int, str]] | None = None  # pending (submit, id, SLUID)
        self.asking_licenses: set[str] = set()  # pending jobs asking for licenses or resources
        self.out_of_order: set[str] = set()  # pending jobs held, niced or expediting
        # pending jobs held, or with a begin time, a dependency or an array parent: the ones
        # whose pending reason may be more than their place in the queue
        self.conditional: set[str] = set()
        # running jobs whose --signal warning is still to be decided (scheduler.jobs.signals)
        self.signalling: set[str] = set()
        for sluid in sorted(jobs, key=lambda s: jobs[s].job_id):
            self.track(jobs[sluid])
            if jobs[sluid].array_job_sluid:
                self.arrays.setdefault(jobs[sluid].array_job_sluid, []).append(sluid)
        by_end = sorted(self.ended, key=lambda s: (jobs[s].end_ms, jobs[s].job_id))
        self.ended = dict.fromkeys(by_end)  # in end order, as evolve files them
        self._index: NodeIndex | None = None
        # a cache, not state: the last scheduling pass, when the next may carry it on
        # (scheduler.scheduling.carry); evolve drops it on any fact but a new job's JobQueued,
        # a JobPending or a CycleCompleted, and it is never persisted
        self.carried: object | None = None

    # -- read-only views used by the shell and the core -------------------------------------
    @property
    def shard(self) -> str:
        return self.meta.shard

    @property
    def shard_seq(self) -> int:
        return self.meta.shard_seq

    @property
    def now_ms(self) -> int:
        return self.meta.now_ms

    @property
    def inbox_offset(self) -> int:
        return self.meta.inbox_offset

    @property
    def config(self) -> ClusterConfig:
        return self.meta.config

    @property
    def purged_jobs(self) -> tuple[str, ...]:
        """Job rows purged by the last ``CycleCompleted`` (the shell deletes them)."""
        return self.meta.purged_jobs

    @property
    def index(self) -> NodeIndex:
        """The node index, rebuilt on first use after nodes or the config changed."""
        if self._index is None:
            running = [self.jobs[s] for s in sorted(self.running)]
            running += [
                held_view(job, job.held)
                for job in (self.jobs[s] for s in sorted(self.completing))
                if job.held
            ]
            self._index = build_index(
                self.nodes, running, self.meta.config, self.meta.config_texts.get("topology")
            )
        return self._index

    def built_index(self) -> NodeIndex | None:
        """The node index if it is built (evolve updates it only then)."""
        return self._index

    def may_act_on(self, user: str, job: Job) -> bool:
        """Whether ``user`` may act on ``job`` as its owner does (cancel, hold, signal, start or
        cancel steps): no user (the system), the job's user, or an operator."""
        return not user or user == job.spec.user or user in self.config.scheduler.operators

    def node_sluid_by_name(self, name: str) -> str:
        """The active node SLUID registered under ``name`` ("" if none)."""
        return self.node_by_name.get(name, "")

    # -- bookkeeping, called by evolve only ---------------------------------------------------
    def invalidate_index(self) -> None:
        self._index = None

    def fifo(self) -> list[tuple[int, int, str]]:
        """The pending jobs' (submit time, job id, SLUID), ascending: first come, first served,
        and among jobs submitted in the same millisecond the lower job id first (Slurm's
        ``sort_job_queue2``: submit time, then job id).

        Kept sorted as jobs enter and leave the queue (``track``), so a pass does not sort.
        """
        if self._fifo is None:
            jobs = self.jobs
            self._fifo = sorted((jobs[s].submit_ms, jobs[s].job_id, s) for s in self.pending)
        return self._fifo

    def track(self, job: Job) -> None:
        """File a job in the pending/running/ended sets and the per-user counts."""
        sluid = job.job_sluid
        was_pending = sluid in self.pending
        self.pending.pop(sluid, None)
        self.running.pop(sluid, None)
        self.completing.pop(sluid, None)
        fifo = self._fifo
        if fifo is not None:
            if was_pending and job.is_pending:  # re-queued: its submit time may have changed
                self._fifo = None
            elif was_pending:
                key = (job.submit_ms, job.job_id, sluid)
                at = bisect.bisect_left(fifo, key)
                if at < len(fifo) and fifo[at] == key:
                    del fifo[at]
                else:
                    self._fifo = None
            elif job.is_pending:
                bisect.insort(fifo, (job.submit_ms, job.job_id, sluid))
        if job.is_pending:
            self.pending[sluid] = None
        elif job.is_running:
            self.running[sluid] = None
        elif job.is_completing:
            self.completing[sluid] = None
        else:
            self.ended[sluid] = None
        self.file_flags(job)

    def file_flags(self, job: Job) -> None:
        """Note whether a pending job asks for licenses, may not queue first come first served
        (held, niced, expediting), or may wait for more than its turn (held, a begin time, a
        dependency, an array task), and whether a running job's ``--signal`` warning is still
        to be sent; a pass then need not look at every job to know."""
        sluid = job.job_sluid
        self.asking_licenses.discard(sluid)
        self.out_of_order.discard(sluid)
        self.conditional.discard(sluid)
        self.signalling.discard(sluid)
        if job.is_running and job.spec.signal and not job.limit_signalled:
            self.signalling.add(sluid)
        if job.is_pending:
            spec = job.spec
            if spec.licenses or spec.resources:
                self.asking_licenses.add(sluid)
            if job.hold or spec.nice or job.expediting or job.admin_priority:
                self.out_of_order.add(sluid)
            if (job.hold or spec.begin_time_ms or spec.dependency or job.array_job_sluid
                    or spec.reservation):
                self.conditional.add(sluid)

    def count_user(self, job: Job, delta: int) -> None:
        """Count a job in or out of the pending, running or completing ones per QOS and user,
        per account and per account and user (submit limits)."""
        key = (job.qos, job.spec.user)
        self.active_by_user[key] = self.active_by_user.get(key, 0) + delta
        account = job.account
        self.active_by_account[account] = self.active_by_account.get(account, 0) + delta
        key = (account, job.spec.user)
        self.active_by_account_user[key] = self.active_by_account_user.get(key, 0) + delta

    def user_jobs(self, qos: str, user: str) -> int:
        """How many pending or running jobs ``user`` has under ``qos``."""
        return self.active_by_user.get((qos, user), 0)


def initial_state(shard: str, cluster_id: int, config: ClusterConfig | None = None) -> ShardState:
    """An empty shard; ``config`` None is the embedded default cluster."""
    meta = ShardMeta(shard=shard, cluster_id=cluster_id, config=config or DEFAULT_CONFIG)
    SluidClock(cluster_id)  # validates the cluster id
    return ShardState(meta, {}, {})


def state_meta(state: ShardState) -> ShardMeta:
    """Everything but the job and node rows, to persist once per batch (a picklable copy)."""
    meta = state.meta
    known = KnownSluids(meta.known.floor_ms, list(meta.known.keys), dict(meta.known.nonces))
    return replace(meta, config_texts=dict(meta.config_texts), known=known, usage=dict(meta.usage))


def restore_state(
    meta: ShardMeta, jobs: Mapping[str, Job], nodes: Mapping[str, Node]
) -> ShardState:
    """Rebuild a state from persisted meta and rows (the node index is rebuilt lazily).

    A meta pickled before a field existed lacks that slot; such fields get the value that
    means what the older state meant (``accrued_ms`` 0: running jobs charged from their start).
    """
    if not hasattr(meta, "accrued_ms"):
        meta.accrued_ms = 0
    if not hasattr(meta, "cycle_ms"):
        meta.cycle_ms = 0
    state = ShardState(meta, dict(jobs), _one_node_a_name(nodes))
    for job in state.jobs.values():
        if job.is_pending or job.is_running or job.is_completing:
            state.count_user(job, +1)
    return state


def _one_node_a_name(nodes: Mapping[str, Node]) -> dict[str, Node]:
    """The rows, with one node per name: a store written before the older node's superseded
    row was persisted (see :func:`node_rows_changed`) can hold two live nodes of one name,
    and no pass could index them. The newest registration keeps the name, as the ledger's
    order of ``NodeRegistered`` facts gave it."""
    rows = dict(nodes)
    holder: dict[str, str] = {}
    for sluid, node in sorted(rows.items()):
        if node.superseded:
            continue
        other = holder.get(node.name)
        if other is None:
            holder[node.name] = sluid
            continue
        older, newer = sorted((other, sluid), key=lambda s: (rows[s].registered_ms, s))
        rows[older] = replace(rows[older], superseded=True)
        holder[node.name] = newer
    return rows


def node_rows_changed(
    state: ShardState, facts: Sequence[tuple[str, Mapping[str, Any]]]
) -> list[str]:
    """The node rows a batch's facts (``(name, record)`` pairs) changed, to persist: the nodes
    they name, and every node of a name registered among them (a name registered under a new
    SLUID marks its earlier node superseded, and no fact names that one)."""
    named = {str(rec["node_sluid"]) for _, rec in facts if rec.get("node_sluid")}
    names = {str(rec["name"]) for kind, rec in facts if kind == "NodeRegistered"}
    if names:
        named.update(sluid for sluid, node in state.nodes.items() if node.name in names)
    return sorted(named)
