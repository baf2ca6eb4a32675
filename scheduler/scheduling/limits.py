"""Why a pending job may not start now, apart from resources: Slurm's pending reasons.

Checked in this order (the first that applies is the reason):

1. holds (``JobHeldAdmin``, ``JobHeldUser``), begin time (``BeginTime``);
2. partition state (``PartitionDown``, ``PartitionInactive``) and limits
   (``PartitionTimeLimit``, ``PartitionNodeLimit``), QOS ``MaxWall``
   (``QOSMaxWallDurationPerJobLimit``), the association's per-job limits
   (``AssocMaxWallDurationPerJobLimit``, ``AssocMaxCpuPerJobLimit``, ``AssocMaxMemPerJob``,
   ``AssocMaxNodePerJobLimit``, ``AssocMaxGRESPerJob``);
3. dependencies (``Dependency``, ``DependencyNeverSatisfied``);
4. limits on what runs at once, counted with the jobs started earlier in the same pass:
   array ``%N`` (``JobArrayTaskLimit``), QOS ``MaxJobsPerUser`` (``QOSMaxJobsPerUserLimit``),
   the association's ``MaxJobs`` and ``GrpJobs`` (``AssocMaxJobsLimit``,
   ``AssocGrpJobsLimit``), QOS ``GrpTRES`` (``QOSGrpCpuLimit``, ``QOSGrpMemLimit``,
   ``QOSGrpGRES``, ``QOSGrpNodeLimit``), the associations' ``GrpTRES`` from the job's account up
   to root (``AssocGrpCpuLimit``, ``AssocGrpMemLimit``, ``AssocGrpNodeLimit``,
   ``AssocGrpGRES``) — Slurm's order (:mod:`scheduler.scheduling.assoc`).

Submission-time limits (``MaxSubmitJobsPerUser``, the association's ``MaxSubmitJobs`` and
``GrpSubmitJobs``, ``EnforcePartLimits``) are in :mod:`scheduler.jobs.decide`; they reject
instead.
"""

from __future__ import annotations

from scheduler.config.cluster import ClusterConfig, PartitionConfig, QosConfig
from scheduler.jobs.arrays import array_limit
from scheduler.jobs.dependencies import NameKey, dependency_reason, first_pending_ids
from scheduler.scheduling.assoc import (
    AssocUsage,
    assoc_table,
    grp_reason,
    jobs_reason,
    static_reason,
)
from scheduler.shard.model import Hold, Job
from scheduler.shard.reasons import PendingReason as P
from scheduler.shard.state import ShardState

__all__ = ["PassUsage", "running_reason", "waiting_reason"]

_Limits = tuple[dict[str, PartitionConfig], dict[str, QosConfig], frozenset[str], dict[str, int]]
_LIMITS: list[tuple[ClusterConfig | None, _Limits]] = [(None, ({}, {}, frozenset(), {}))]


def _limits_of(config: ClusterConfig) -> _Limits:
    """The partitions by name, the QOS with limits on what runs at once, the partitions whose
    state and limits never hold a job back, and each QOS's MaxWall (memoised per config)."""
    cached, limits = _LIMITS[0]
    if cached is config:
        return limits
    limits = (
        {p.name: p for p in config.partitions},
        {
            q.name: q
            for q in config.qos
            if q.max_jobs_per_user or q.grp_cpus or q.grp_mem_mb or q.grp_gpus or q.grp_nodes
        },
        frozenset(
            p.name
            for p in config.partitions
            if p.state == "UP" and not p.max_time_s and not p.max_nodes
        ),
        {q.name: q.max_wall_s for q in config.qos if q.max_wall_s},
    )
    _LIMITS[0] = (config, limits)
    return limits

_Alloc = tuple[tuple[int, int, int], ...] | list[tuple[int, int, int]]


class PassUsage:
    """What runs now, per limit key; the pass adds each job it starts."""

    __slots__ = (
        "_later",
        "_state",
        "arrays",
        "assoc",
        "assoc_limited",
        "assoc_usage",
        "config",
        "grp",
        "max_wall",
        "names",
        "parts",
        "pending_names",
        "plain_parts",
        "qos",
        "user_jobs",
    )

    def __init__(self, state: ShardState) -> None:
        self.config: ClusterConfig = state.config
        self.parts, self.qos, self.plain_parts, self.max_wall = _limits_of(state.config)
        self.assoc = assoc_table(state.config)  # None: no account sets a limit
        self.assoc_limited = self.assoc.limited if self.assoc is not None else frozenset()
        self.assoc_usage = AssocUsage(self.assoc) if self.assoc is not None else None
        self.user_jobs: dict[tuple[str, str], int] = {}
        self.grp: dict[str, list[int]] = {}
        self.arrays: dict[str, int] = {}
        self.names: set[NameKey] = set()
        # singleton: the lowest pending job id per (user, name), taken once, on first use
        self.pending_names: dict[NameKey, int] | None = None
        self._state: ShardState | None = state  # counted on first use (most passes need none)
        self._later: list[tuple[Job, _Alloc, tuple[str, ...] | None]] = []

    def counted(self) -> PassUsage:
        """Count the running jobs, once, before the first question."""
        state, self._state = self._state, None
        if state is not None:
            for sluid in state.running:
                job = state.jobs[sluid]
                self._count(job, job.alloc, job.nodes)
            for job, alloc, nodes in self._later:
                self._count(job, alloc, nodes)
            self._later.clear()
        return self

    def dependency_reason(self, state: ShardState, job: Job, now_ms: int) -> str:
        """The job's dependency reason ("" when it holds), with the jobs running and started
        in the pass, and the jobs pending when it began (``singleton``)."""
        if self.pending_names is None and "singleton" in job.spec.dependency:
            self.pending_names = first_pending_ids(state)
        return dependency_reason(state, job, now_ms, self.counted().names,
                                 self.pending_names or {})

    def add(
        self,
        job: Job,
        alloc: tuple[tuple[int, int, int], ...] | list[tuple[int, int, int]],
        nodes: tuple[str, ...] | None = None,
    ) -> None:
        """Count a just started job on ``nodes`` (None: unknown, all counted as new), after
        the running ones if they were counted."""
        if self._state is None:
            self._count(job, alloc, nodes)
        else:
            self._later.append((job, alloc, nodes))

    def _count(
        self,
        job: Job,
        alloc: tuple[tuple[int, int, int], ...] | list[tuple[int, int, int]],
        nodes: tuple[str, ...] | None,
    ) -> None:
        if self.assoc_usage is not None:
            self.assoc_usage.count(job, alloc, nodes)
        key = (job.qos, job.spec.user)
        self.user_jobs[key] = self.user_jobs.get(key, 0) + 1
        if job.array_job_sluid:
            self.arrays[job.array_job_sluid] = self.arrays.get(job.array_job_sluid, 0) + 1
        self.names.add((job.spec.user, job.spec.name))
        if job.qos in self.qos:
            totals = self.grp.setdefault(job.qos, [0, 0, 0, 0])
            totals[0] += sum(a[0] for a in alloc)
            totals[1] += sum(a[1] for a in alloc)
            totals[2] += sum(a[2] for a in alloc)
            totals[3] += len(alloc)


def _static_reason(job: Job, usage: PassUsage, now_ms: int) -> str:
    if job.hold:
        if job.reason == P.MAX_REQUEUE:  # held by MaxBatchRequeue, not by a person
            return P.MAX_REQUEUE
        return P.HELD_ADMIN if job.hold == Hold.ADMIN else P.HELD_USER
    if job.spec.begin_time_ms > now_ms:
        return P.BEGIN_TIME
    part = usage.parts.get(job.partition)
    if part is None or part.state == "DOWN":
        return P.PARTITION_DOWN
    if part.state == "INACTIVE":
        return P.PARTITION_INACTIVE
    if part.max_time_s and (job.time_limit_s == 0 or job.time_limit_s > part.max_time_s):
        return P.PARTITION_TIME_LIMIT
    if part.max_nodes and job.demand.nodes_min > part.max_nodes:
        return P.PARTITION_NODE_LIMIT
    max_wall = usage.max_wall.get(job.qos, 0)
    if max_wall and (job.time_limit_s == 0 or job.time_limit_s > max_wall):
        return P.QOS_MAX_WALL
    if usage.assoc is not None and job.account in usage.assoc_limited:
        limits = usage.assoc.limits(job.account, job.qos)
        if limits.static:
            return static_reason(job, limits)
    return ""


def _running_limit_reason(job: Job, usage: PassUsage) -> str:
    assoc = None
    if usage.assoc is not None and job.account in usage.assoc_limited:
        assoc = usage.assoc.limits(job.account, job.qos)
        if not assoc.running:
            assoc = None
    if not job.array_job_sluid and job.qos not in usage.qos and assoc is None:
        return ""
    usage.counted()
    if job.array_job_sluid:
        limit = array_limit(job.spec.array)
        if limit and usage.arrays.get(job.array_job_sluid, 0) >= limit:
            return P.ARRAY_TASK_LIMIT
    qos = usage.qos.get(job.qos)
    if (
        qos is not None
        and qos.max_jobs_per_user
        and (usage.user_jobs.get((job.qos, job.spec.user), 0) >= qos.max_jobs_per_user)
    ):
        return P.QOS_MAX_JOBS_PER_USER
    if assoc is not None and usage.assoc_usage is not None:
        reason = jobs_reason(job, assoc, usage.assoc_usage)
        if reason:
            return reason
    reason = _qos_grp_reason(job, qos, usage) if qos is not None else ""
    if not reason and assoc is not None and usage.assoc_usage is not None:
        reason = grp_reason(job, assoc, usage.assoc_usage)
    return reason


def _qos_grp_reason(job: Job, qos: QosConfig, usage: PassUsage) -> str:
    totals = usage.grp.get(job.qos, [0, 0, 0, 0])
    demand = job.demand
    nodes = demand.nodes_min
    checks = (
        (qos.grp_cpus, totals[0] + demand.cpus * nodes, P.QOS_GRP_CPU),
        (qos.grp_mem_mb, totals[1] + demand.mem_mb * nodes, P.QOS_GRP_MEM),
        (qos.grp_gpus, totals[2] + demand.gpus * nodes, P.QOS_GRP_GRES),
        (qos.grp_nodes, totals[3] + nodes, P.QOS_GRP_NODE),
    )
    for limit, wanted, reason in checks:
        if limit and wanted > limit:
            return reason
    return ""


def waiting_reason(state: ShardState, job: Job, usage: PassUsage, now_ms: int) -> str:
    """The first reason other than resources that keeps ``job`` pending now ("" if none)."""
    spec = job.spec
    if (
        not job.hold
        and spec.begin_time_ms <= now_ms
        and not spec.dependency
        and not job.array_job_sluid
        and job.partition in usage.plain_parts
        and job.qos not in usage.max_wall
        and job.qos not in usage.qos
        and job.account not in usage.assoc_limited
    ):
        return ""  # the common case: nothing but resources can hold this job
    reason = _static_reason(job, usage, now_ms)
    if reason:
        return reason
    if job.spec.dependency:
        reason = usage.dependency_reason(state, job, now_ms)
        if reason:
            return reason
    return _running_limit_reason(job, usage)


def running_reason(state: ShardState, job: Job, usage: PassUsage, now_ms: int) -> str:
    """The part of :func:`waiting_reason` that jobs started earlier in the pass can change."""
    if job.spec.dependency and "singleton" in job.spec.dependency:
        reason = usage.dependency_reason(state, job, now_ms)
        if reason:
            return reason
    if (
        not job.array_job_sluid
        and job.qos not in usage.qos
        and job.account not in usage.assoc_limited
    ):
        return ""
    return _running_limit_reason(job, usage)
