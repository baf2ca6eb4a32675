"""Requests: what clients, node daemons and Sluice's own agents ask a shard to do.

Names are imperatives; fields follow docs/records.md exactly (``Tick``, ``NodeFailed`` and
``CloseCycle`` are internal to the shard inbox). A request is decided by :func:`scheduler.decide`
into facts; it never changes state by itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler.spec import JobSpec

__all__ = [
    "ApplyConfig",
    "CancelJob",
    "CloseCycle",
    "DrainNode",
    "HoldJob",
    "NodeFailed",
    "RegisterNode",
    "ReleaseJob",
    "ReportEpilog",
    "ReportJobExit",
    "ReportProlog",
    "Request",
    "RequeueJob",
    "ResumeNode",
    "SubmitJob",
    "Tick",
    "UpdateJob",
]


def _no_changes() -> Mapping[str, str]:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmitJob:
    """Queue a job; the client mints ``job_sluid``, so a resubmission is the same job."""

    job_sluid: str
    spec: JobSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelJob:
    """Cancel a job (or every task of an array, by the array's SLUID)."""

    job_sluid: str
    user: str = ""
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldJob:
    """Hold a pending job (user hold, or admin hold when ``admin``)."""

    job_sluid: str
    user: str = ""
    admin: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseJob:
    """Release a held job."""

    job_sluid: str
    user: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateJob:
    """Change fields of a pending job's spec: JobSpec field name → new value as text."""

    job_sluid: str
    user: str = ""
    changes: Mapping[str, str] = field(default_factory=_no_changes)


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterNode:
    """A node daemon announces itself and its resources."""

    node_sluid: str
    name: str
    cpus: int
    mem_mb: int
    gpus: int = 0
    gpu_type: str = ""
    features: tuple[str, ...] = ()
    boot_ms: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportJobExit:
    """A node daemon reports that a run's batch script exited."""

    job_sluid: str
    run_sluid: str
    node_sluid: str
    node_name: str
    exit_code: int
    signal: int = 0
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportProlog:
    """A node daemon reports a run's prolog (it reports only failures: ``ok`` False)."""

    job_sluid: str
    run_sluid: str
    node_sluid: str
    node_name: str
    ok: bool
    exit_code: int = 0
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportEpilog:
    """A node daemon reports that a run's epilog finished on it (after every ``KillRun``)."""

    job_sluid: str
    run_sluid: str
    node_sluid: str
    node_name: str
    ok: bool
    exit_code: int = 0
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class DrainNode:
    """An operator drains a node (no new work; runs finish), or takes it DOWN (runs fail)."""

    name: str
    reason: str
    down: bool = False
    user: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeNode:
    """An operator returns a DRAIN or DOWN node to service."""

    name: str
    user: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RequeueJob:
    """Requeue a running job (its owner or an operator); ``hold`` requeues it held."""

    job_sluid: str
    user: str = ""
    hold: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ApplyConfig:
    """Apply a configuration file (its text; the core does no I/O)."""

    config_sluid: str
    kind: str
    text: str
    source: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tick:
    """Time passes: the clock agent's heartbeat into every shard."""

    shard: str
    time_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeFailed:
    """The health agent declares a node dead (missed heartbeats)."""

    node_sluid: str
    name: str
    reason: str
    time_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CloseCycle:
    """Close a batch of inbox records (never on the wire): asks for ``CycleCompleted``."""

    inbox_partition: int
    inbox_from: int
    inbox_to: int


Request = (
    SubmitJob
    | CancelJob
    | HoldJob
    | ReleaseJob
    | UpdateJob
    | RegisterNode
    | ReportJobExit
    | ReportProlog
    | ReportEpilog
    | DrainNode
    | ResumeNode
    | RequeueJob
    | ApplyConfig
    | Tick
    | NodeFailed
    | CloseCycle
)
"""Everything :func:`scheduler.decide` accepts."""
