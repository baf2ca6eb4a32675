"""The shard's entities: jobs and nodes, as frozen values changed with ``dataclasses.replace``.

A :class:`Demand` is what a job needs *per node*, resolved once at queueing from its spec, so
the scheduling pass never re-derives it. :func:`natural_key` is the one node ordering used
everywhere (Slurm's ``_sort_by_name``: ``n2`` before ``n10``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scheduler.records import JobSpec, Segment, StepPending
from scheduler.records.fast_init import fast_init, slot_replacer
from scheduler.shard.reasons import JobState, NodeState, PendingReason

__all__ = ["KUBERNETES_FEATURE", "Demand", "Hold", "Job", "Node", "Step", "held_view",
           "job_with", "natural_key"]

KUBERNETES_FEATURE = "kubernetes"
"""The feature every node of the Kubernetes bridge registers with (its runs are pods)."""

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[object, ...], str]:
    """Sort key for node names: digit runs compare as numbers, then the name breaks ties."""
    parts = _DIGITS.split(name)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), name


class Hold:
    """Who holds a pending job: nobody, its user, or an operator."""

    NONE = ""
    USER = "user"
    ADMIN = "admin"


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Demand:
    """What a job needs on each node it gets, and how many nodes."""

    nodes_min: int
    nodes_max: int
    cpus: int
    mem_mb: int
    gpus: int
    gpu_type: str
    exclusive: bool
    shape: tuple[int, int, int, str, bool] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        """``shape`` is the per-node part, which decides whether a node can host the job."""
        shape = (self.cpus, self.mem_mb, self.gpus, self.gpu_type, self.exclusive)
        object.__setattr__(self, "shape", shape)


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """A job step (srun) of its job's run: running on ``nodes`` (``exited`` lists the nodes
    whose tasks have ended: the step ends when all have, or one failed), or waiting for the
    job's resources other steps hold (``waiting``: the request, kept until a ``StepStarted``;
    no id and no nodes yet). A running step holds, on each of its nodes, ``cpus``, ``mem_mb``
    and ``gpus`` of the job's (:mod:`scheduler.jobs.step_alloc`), unless ``overlap``."""

    step_sluid: str
    step_id: int
    nodes: tuple[str, ...]
    exited: tuple[str, ...] = ()
    io_token: str = ""  # srun's own (random): a StartStep with another is another srun's
    cpus: tuple[int, ...] = ()  # per node of ``nodes``; () = not recorded (holds nothing)
    mem_mb: tuple[int, ...] = ()
    gpus: tuple[int, ...] = ()
    overlap: bool = False  # srun --overlap: shares the job's resources, holds none
    waiting: StepPending | None = None  # the step waits: what srun asked (StepPending)


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One job (or one array task) in a shard, from queueing until it is purged."""

    job_sluid: str
    job_id: int
    spec: JobSpec
    submit_ms: int
    partition: str
    qos: str
    account: str
    time_limit_s: int  # resolved at queueing; 0 = no limit
    demand: Demand
    state: str = JobState.PENDING
    reason: str = PendingReason.NONE
    priority: int = 0
    hold: str = Hold.NONE
    array_job_sluid: str = ""
    array_task_id: int = -1
    run_sluid: str = ""
    previous_run_sluid: str = ""
    restart_count: int = 0
    nodes: tuple[str, ...] = ()
    node_sluids: tuple[str, ...] = ()
    alloc: tuple[tuple[int, int, int], ...] = ()  # (cpus, mem_mb, gpus) per node
    start_ms: int = 0
    end_ms: int = 0
    kill_reason: str = ""
    exit_code: int = 0
    signal: int = 0
    expediting: bool = False  # EXPEDITING: sorts first until its next run starts
    segments: tuple[Segment, ...] = ()  # of the current (or last) run
    # resolved at queueing: "yes", "no" or "expedite" (scheduler.requeue.rules)
    requeue: str = "yes"
    requeue_reason: str = ""  # while COMPLETING: the coming JobRequeued's reason
    completing: tuple[str, ...] = ()  # while COMPLETING: nodes whose epilog is awaited
    held: tuple[str, ...] = ()  # while COMPLETING: nodes whose allocation it still holds
    epilog_failed: bool = False
    batch_requeues: int = 0  # Slurm's batch_flag - 1: counted requeues since the last max hold
    requeued_ms: int = 0  # when it was last requeued (the hot-swap clock starts here)
    # the current (or last) run's LaunchRun.restart_after_ms (scheduler.requeue.rules)
    restart_after_ms: int = 0
    next_step_id: int = 0  # the id the run's next step gets (ID.0, ID.1, …)
    steps: tuple[Step, ...] = ()  # the steps of the current run that have not ended
    limit_signalled: bool = False  # the run's --signal warning was sent (RunSignalled)
    # (run SLUID, node name, since ms): nodes whose heartbeats miss the run (RunMissingNoted)
    missing: tuple[tuple[str, str, int], ...] = ()
    nonce: int = 0  # the submission's (SubmitJob.nonce): tells a redelivery from a collision
    admin_priority: int = 0  # an operator's (JobPrioritySet), used instead of multifactor; 0: none
    # the dependency text a pass found never satisfiable (JobPending DependencyNeverSatisfied):
    # it stays so, as Slurm's DEPEND_FAILED, while the spec's dependency is that text ("": none)
    dependency_failed: str = ""

    @property
    def is_pending(self) -> bool:
        """True while the job waits to run."""
        return self.state == JobState.PENDING

    @property
    def is_running(self) -> bool:
        """True while a run holds nodes."""
        return self.state == JobState.RUNNING

    @property
    def is_completing(self) -> bool:
        """True while a requeue waits for the epilogs of the run that ended."""
        return self.state == JobState.COMPLETING

    @property
    def has_ended(self) -> bool:
        """True once the job reached a final state."""
        return self.state in JobState.ENDED


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """One registered node: its resources and its announced state."""

    node_sluid: str
    name: str
    cpus: int
    mem_mb: int
    gpus: int
    gpu_type: str
    features: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    state: str = NodeState.IDLE
    reason: str = ""
    registered_ms: int = 0
    registrant: str = ""  # the verified identity that registered it ("" without credentials)
    superseded: bool = False  # the name was re-registered under another node SLUID
    suspect: str = ""  # NodeSuspected's reason: silent in a suspected partition, no new work

    @property
    def schedulable(self) -> bool:
        """In service and not suspected of being cut off: new work may start here."""
        return self.state in NodeState.SCHEDULABLE and not self.suspect


_REPLACERS: dict[tuple[str, ...], Callable[..., Job]] = {}
"""Per tuple of changed fields (one per call site of ``job_with``): the copy that sets them."""


def job_with(job: Job, **changes: Any) -> Job:
    """``dataclasses.replace(job, **changes)`` for the fold's hot path, two to three times as
    fast (a test checks it equals ``replace``): a copy through the slots that sets each field
    once, written once per set of changed fields (a bounded memo)."""
    key = tuple(changes)
    replace = _REPLACERS.get(key)
    if replace is None:
        if len(_REPLACERS) > 256:
            _REPLACERS.clear()
        replace = _REPLACERS[key] = slot_replacer(Job, key)
    return replace(job, *changes.values())


def held_view(job: Job, names: tuple[str, ...]) -> Job:
    """``job`` narrowed to the nodes ``names`` (with their allocations), for the node index:
    what a COMPLETING job still holds."""
    alloc = dict(zip(job.nodes, job.alloc, strict=True))
    sluids = dict(zip(job.nodes, job.node_sluids, strict=True))
    return Job(
        job_sluid=job.job_sluid,
        job_id=job.job_id,
        spec=job.spec,
        submit_ms=job.submit_ms,
        partition=job.partition,
        qos=job.qos,
        account=job.account,
        time_limit_s=job.time_limit_s,
        demand=job.demand,
        nodes=names,
        node_sluids=tuple(sluids[n] for n in names),
        alloc=tuple(alloc[n] for n in names),
    )


def node_with_state(node: Node, state: str, reason: str) -> Node:
    """``replace(node, state=…, reason=…)`` without ``dataclasses.replace``'s introspection."""
    return Node(
        node_sluid=node.node_sluid,
        name=node.name,
        cpus=node.cpus,
        mem_mb=node.mem_mb,
        gpus=node.gpus,
        gpu_type=node.gpu_type,
        features=node.features,
        partitions=node.partitions,
        state=state,
        reason=reason,
        registered_ms=node.registered_ms,
        registrant=node.registrant,
        superseded=node.superseded,
        # no suspect: every announced state (the node answered, or it went DOWN) ends a suspicion
    )
