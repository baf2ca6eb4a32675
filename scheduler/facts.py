"""Facts: what a shard decided, the ledger's records (past participles).

Every fact starts with the same four fields, assigned by the shard when it decides:
``event_sluid`` (minted from the shard's SLUID clock at the decision time), ``shard``,
``shard_seq`` (gap-free from 1) and ``time_ms`` (the decision time, never decreasing).
The other fields follow docs/records.md exactly. :func:`scheduler.evolve` is the only function
that turns facts into state.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.spec import JobSpec, Segment

__all__ = [
    "ConfigApplied",
    "CycleCompleted",
    "Fact",
    "FactBase",
    "JobEnded",
    "JobExpediting",
    "JobHeld",
    "JobPending",
    "JobQueued",
    "JobRejected",
    "JobReleased",
    "JobRequeued",
    "JobStarted",
    "NodeEpilogCompleted",
    "NodeRegistered",
    "NodeStateChanged",
    "RunKillRequested",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class FactBase:
    """The four fields every fact carries."""

    event_sluid: str
    shard: str
    shard_seq: int
    time_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class JobQueued(FactBase):
    """A submission was accepted and the job (or one array task) is pending."""

    job_sluid: str
    job_id: int
    spec: JobSpec
    array_job_sluid: str = ""
    array_task_id: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRejected(FactBase):
    """A request about a job was refused, with a named reason."""

    job_sluid: str
    reason: str
    detail: str
    retryable: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class JobPending(FactBase):
    """A pending job's reason changed (recorded only on change)."""

    job_sluid: str
    reason: str
    priority: int


@dataclass(frozen=True, slots=True, kw_only=True)
class JobStarted(FactBase):
    """A run of a job was started on these nodes."""

    job_sluid: str
    job_id: int
    run_sluid: str
    restart_count: int
    nodes: tuple[str, ...]
    node_sluids: tuple[str, ...]
    segments: tuple[Segment, ...] = ()
    partition: str
    user: str
    time_limit_s: int
    submit_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RunKillRequested(FactBase):
    """A running run must be killed (``CANCELLED``, ``TIMEOUT``, ``PREEMPTED``, ``NODE_FAIL``)."""

    job_sluid: str
    run_sluid: str
    reason: str
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobEnded(FactBase):
    """A job reached a final state; its nodes are free."""

    job_sluid: str
    job_id: int
    run_sluid: str
    state: str
    exit_code: int = 0
    signal: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobHeld(FactBase):
    """A pending job was held (by its user, or by an operator when ``admin``)."""

    job_sluid: str
    admin: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class JobReleased(FactBase):
    """A held job was released."""

    job_sluid: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeRegistered(FactBase):
    """A node joined (or re-joined with new resources) and belongs to these partitions."""

    node_sluid: str
    name: str
    cpus: int
    mem_mb: int
    gpus: int
    gpu_type: str
    features: tuple[str, ...]
    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeStateChanged(FactBase):
    """A node's state changed (``IDLE``, ``MIXED``, ``ALLOCATED``, ``DOWN``, ``INVALID_REG``…)."""

    node_sluid: str
    name: str
    state: str
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigApplied(FactBase):
    """A configuration was validated and is now in force (replay re-parses ``text``)."""

    config_sluid: str
    kind: str
    digest: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CycleCompleted(FactBase):
    """A batch of inbox records was applied; the shell resumes after ``inbox_to``."""

    inbox_partition: int
    inbox_from: int
    inbox_to: int
    pending: int
    running: int
    started: int


@dataclass(frozen=True, slots=True, kw_only=True)
class JobExpediting(FactBase):
    """A job will be requeued expedited (``NODE_FAIL``, or ``EPILOG_FAILED`` after a non-zero
    exit); it sorts ahead of every other job until its next run starts."""

    job_sluid: str
    run_sluid: str
    trigger: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeEpilogCompleted(FactBase):
    """The shard stops waiting for one node's epilog of a run: it was reported (``ok`` says how
    it went), or the node went DOWN or re-registered (``detail`` says which)."""

    node_sluid: str
    name: str
    job_sluid: str
    run_sluid: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRequeued(FactBase):
    """Every epilog of ``run_sluid`` is done and the job is pending again (Slurm's
    ``batch_requeue_fini``): ``expedite`` (eligible now, sorts first), ``held``, or eligible at
    ``begin_time_ms``; its next run is ``restart_count``."""

    job_sluid: str
    job_id: int
    run_sluid: str
    reason: str
    expedite: bool
    held: bool
    begin_time_ms: int
    restart_count: int


Fact = (
    JobQueued
    | JobRejected
    | JobPending
    | JobStarted
    | RunKillRequested
    | JobEnded
    | JobHeld
    | JobReleased
    | NodeRegistered
    | NodeStateChanged
    | ConfigApplied
    | CycleCompleted
    | JobExpediting
    | NodeEpilogCompleted
    | JobRequeued
)
"""Every record the shard writes to the ledger."""
