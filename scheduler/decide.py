"""``decide(state, request, now_ms) -> facts``: one request, decided against the state.

Pure: no clock (``now_ms`` is the request's time), no randomness, no I/O, and no decision by
the order of an unordered collection. The facts carry their meta (see :mod:`scheduler.shard.stamp`);
evolve them in order before deciding the next request. Time limits and begin times are not
acted on here but in :func:`scheduler.schedule`, which the shell calls once per batch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from scheduler.access.authz import authorize
from scheduler.access.identity import ANONYMOUS, Attributed
from scheduler.config.cluster import ClusterConfig, ConfigError, parse_config
from scheduler.jobs.decide import (
    decide_cancel,
    decide_exit,
    decide_hold,
    decide_release,
    decide_submit,
    decide_update,
)
from scheduler.jobs.epilog import decide_epilog, decide_prolog
from scheduler.jobs.partition_list import partition_names
from scheduler.jobs.priorities_plan import decide_plan_priorities
from scheduler.jobs.refusals import RefuseSubmission, decide_refusal
from scheduler.jobs.rejected import rejected
from scheduler.jobs.shares_plan import decide_plan_shares
from scheduler.jobs.starts import decide_plan_starts
from scheduler.jobs.step_waits import waits_started
from scheduler.jobs.steps import decide_start_step, decide_step_exit, steps_closed_by
from scheduler.jobs.test_only import decide_test_submit
from scheduler.nodes.admin import decide_drain, decide_resume
from scheduler.nodes.clock_ahead import decide_node_clock_ahead
from scheduler.nodes.command_refusals import decide_command_refused
from scheduler.nodes.decide import decide_node_failed, decide_register
from scheduler.nodes.return_to_service import decide_node_responding
from scheduler.records import (
    ApplyConfig,
    CancelJob,
    CloseCycle,
    ConfigApplied,
    CreateReservation,
    CycleCompleted,
    DeleteReservation,
    DrainNode,
    Fact,
    HoldJob,
    JobEnded,
    NodeClockAhead,
    NodeFailed,
    NodeResponding,
    PlanPriorities,
    PlanShares,
    PlanStarts,
    RegisterNode,
    ReleaseJob,
    ReportCommandRefused,
    ReportEpilog,
    ReportJobExit,
    ReportProlog,
    ReportStepExit,
    Request,
    RequestDenied,
    RequeueJob,
    ResumeNode,
    StartStep,
    SubmitJob,
    TestSubmitJob,
    Tick,
    UpdateJob,
)
from scheduler.requeue.decide import decide_requeue
from scheduler.reservations.decide import (
    decide_create_reservation,
    decide_delete_reservation,
)
from scheduler.scheduling.licenses import ResourcesConfigError, parse_resources
from scheduler.scheduling.placement import TopologyConfigError, blocks_of, parse_topology
from scheduler.shard.reasons import JobState, RejectionReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from scheduler.topology.hostlist import compress

__all__ = ["CONFIG_KINDS", "decide", "request_nonce"]

CONFIG_KINDS = ("cluster", "topology", "resources")


def decide(state: ShardState, request: Request | Attributed, now_ms: int) -> list[Fact]:
    """The facts that ``request`` leads to at ``now_ms`` (possibly none).

    A request wrapped in :class:`Attributed` is decided for its verified identity, a bare one
    as :data:`ANONYMOUS`; :func:`scheduler.access.authz.authorize` first refuses what the
    identity may not do, with one ``RequestDenied`` fact that changes nothing else.
    """
    identity = ANONYMOUS
    if isinstance(request, Attributed):
        identity = request.identity
        request = request.request
    handler = _HANDLERS.get(type(request))
    if handler is None:
        raise TypeError(f"decide() does not accept {type(request).__name__}")
    st = Stamper(state, now_ms)
    allowed, denial = authorize(state, request, identity)
    if denial is not None:
        requester = identity.user if identity.kind != "none" else ""
        if isinstance(request, RegisterNode) and identity.registrant:
            # as the registration's own refusals (scheduler.nodes.decide): the identity as a
            # registration records it, which a refused daemon knows as its own
            # (scheduler.nodes.registration_requests)
            requester = identity.registrant
        return [
            RequestDenied(
                **st.meta(), request=type(request).__name__,
                subject_sluid=denial.subject_sluid, requester=requester,
                reason=denial.reason, detail=denial.detail, nonce=request_nonce(request),
            )
        ]
    facts = handler(state, allowed, st)
    facts += steps_closed_by(state, allowed, facts, st)
    return facts + waits_started(state, facts, st)


def request_nonce(request: object) -> int:
    """The nonce a request's client drew (``SubmitJob``, ``TestSubmitJob``, ``PlanStarts``,
    ``PlanPriorities``, ``PlanShares``), 0 for a request without one: a ``RequestDenied``
    carries it, so a client waiting on a SLUID takes only the refusal of its own request (an
    identical SLUID under another user's refused request answers nobody else:
    ``projections/decisions.py``)."""
    value = getattr(request, "nonce", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _apply_config(state: ShardState, req: ApplyConfig, st: Stamper) -> list[Fact]:
    """A valid file → ConfigApplied; a bad one → JobRejected(InvalidConfig) keyed by its SLUID.

    ``cluster`` files are parsed here, ``topology`` files by the topology plugins' parsers
    (topology.yaml or topology.conf; an empty text removes the topology), ``resources`` files
    by the resources module (resources.yaml; an empty text removes them).
    """
    if req.kind not in CONFIG_KINDS:
        return rejected(
            st,
            req.config_sluid,
            RejectionReason.INVALID_CONFIG,
            f"unknown configuration kind {req.kind!r}",
        )
    if state.meta.config_texts.get(req.kind) == req.text:
        return []
    source = req.source or req.config_sluid
    default_partition, blocks = "", dict[str, str]()
    private_jobs, privileged = False, tuple[str, ...]()
    partition_fields: dict[str, Any] = {}
    try:
        if req.kind == "cluster":
            parsed = parse_config(req.text, source)
            default = parsed.partition("")
            default_partition = default.name if default is not None else ""
            private_jobs = parsed.auth.required
            partition_fields = _partitions(parsed)
            privileged = tuple(sorted(set(parsed.scheduler.operators)
                                      | set(parsed.auth.administrators)))
        elif req.kind == "topology" and req.text.strip():
            blocks = blocks_of(parse_topology(req.text, source))
        elif req.kind == "resources" and req.text.strip():
            parse_resources(req.text, source, tuple(n for n, _ in state.config.licenses))
    except (ConfigError, TopologyConfigError, ResourcesConfigError) as error:
        return rejected(st, req.config_sluid, RejectionReason.INVALID_CONFIG, str(error))
    digest = hashlib.sha256(req.text.encode()).hexdigest()
    return [
        ConfigApplied(
            **st.meta(),
            config_sluid=req.config_sluid,
            kind=req.kind,
            digest=digest,
            text=req.text,
            default_partition=default_partition,
            blocks=blocks,
            private_jobs=private_jobs,
            privileged=privileged,
            **partition_fields,
        ),  # stamped before the jobs it fails (facts take their shard_seq in list order)
        *(_failed_by_removed_partitions(state, parsed, st) if req.kind == "cluster" else []),
    ]


def _failed_by_removed_partitions(state: ShardState, new: ClusterConfig,
                                  st: Stamper) -> list[Fact]:
    """The pending jobs whose partition, or one of whose ``-p a,b`` list, the new file
    removes: each ends ``NODE_FAIL``, as Slurm's reconfigure fails a job whose partition no
    longer exists (``_sync_jobs_to_conf``: ``Invalid partition (b) for JobId=…``; a list with
    one name gone fails whole, ``get_part_list``). A running job keeps its run."""
    gone = {p.name for p in state.config.partitions} - {p.name for p in new.partitions}
    if not gone:
        return []
    facts: list[Fact] = []
    for sluid in state.pending:
        job = state.jobs[sluid]
        if not job.is_pending:
            continue
        missing = [name for name in partition_names(job.partition) if name in gone]
        if missing:
            facts.append(JobEnded(
                **st.meta(), job_sluid=sluid, job_id=job.job_id, run_sluid="",
                # Slurm sets the raw wait status 1, which sacct and scontrol print 0:1
                state=JobState.NODE_FAIL, exit_code=0, signal=1, job_state=JobState.NODE_FAIL,
                reason=f"partition {missing[0]} was removed from the configuration"))
    return facts



def _partitions(config: ClusterConfig) -> dict[str, Any]:
    """What sinfo and scontrol show of the partitions (ConfigApplied's parallel partition_*
    lists)."""
    parts = config.partitions
    return {
        "partition_names": tuple(p.name for p in parts),
        "partition_states": tuple(p.state for p in parts),
        "partition_max_times": tuple(p.max_time_s for p in parts),
        "partition_nodes": tuple("" if p.nodes is None else compress(p.nodes) for p in parts),
        "partition_default_times": tuple(p.default_time_s for p in parts),
        "partition_max_nodes": tuple(p.max_nodes for p in parts),
        "partition_allow_qos": tuple(",".join(p.allow_qos) for p in parts),
        "partition_priority_tiers": tuple(p.priority_tier for p in parts),
        "partition_job_factors": tuple(p.priority_job_factor for p in parts),
    }


def _close_cycle(state: ShardState, req: CloseCycle, st: Stamper) -> list[Fact]:
    return [
        CycleCompleted(
            **st.meta(),
            inbox_partition=req.inbox_partition,
            inbox_from=req.inbox_from,
            inbox_to=req.inbox_to,
            pending=len(state.pending),
            running=len(state.running),
            started=state.meta.started_in_cycle,
        )
    ]


def _tick(state: ShardState, req: Tick, st: Stamper) -> list[Fact]:
    del state, req, st  # time is acted on by schedule(), which the shell calls per batch
    return []


_HANDLERS: dict[type, Callable[[ShardState, Any, Stamper], list[Fact]]] = {
    SubmitJob: decide_submit,
    TestSubmitJob: decide_test_submit,
    PlanStarts: decide_plan_starts,
    PlanPriorities: decide_plan_priorities,
    PlanShares: decide_plan_shares,
    CancelJob: decide_cancel,
    HoldJob: decide_hold,
    ReleaseJob: decide_release,
    UpdateJob: decide_update,
    RegisterNode: decide_register,
    ReportJobExit: decide_exit,
    ApplyConfig: _apply_config,
    Tick: _tick,
    NodeFailed: decide_node_failed,
    NodeResponding: decide_node_responding,
    NodeClockAhead: decide_node_clock_ahead,
    CloseCycle: _close_cycle,
    ReportProlog: decide_prolog,
    ReportEpilog: decide_epilog,
    DrainNode: decide_drain,
    ResumeNode: decide_resume,
    RequeueJob: decide_requeue,
    RefuseSubmission: decide_refusal,
    StartStep: decide_start_step,
    ReportStepExit: decide_step_exit,
    ReportCommandRefused: decide_command_refused,
    CreateReservation: decide_create_reservation,
    DeleteReservation: decide_delete_reservation,
}
