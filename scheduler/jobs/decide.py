"""Deciding job requests: submit, cancel, hold, release, update, exit reports.

Each function takes the state, the request and a :class:`Stamper` and returns facts. A
duplicate or a request about an unknown or stale run returns no fact; a request that breaks a
rule returns a ``JobRejected`` with a named reason (the job, if any, is unchanged).
"""

from __future__ import annotations

from dataclasses import replace

from scheduler.jobs.admission import check_submission
from scheduler.jobs.arrays import array_facts
from scheduler.jobs.cancelled import cancelled_without_run
from scheduler.jobs.epilog import epilog_after_end, epilog_with_exit
from scheduler.jobs.node_count import same_submission, with_node_count
from scheduler.jobs.priority_updates import decide_priority_update
from scheduler.jobs.queued import queued_fact, unreserved_fact
from scheduler.jobs.rejected import rejected
from scheduler.jobs.retention import sluid_ms
from scheduler.jobs.running_updates import decide_running_update, past_limit
from scheduler.jobs.signals import SIGKILL, decide_signal
from scheduler.jobs.steps import decide_step_cancel
from scheduler.jobs.submission_checks import (
    admission_problem,
    check_dependency,
    check_reservation,
)
from scheduler.jobs.updates import apply_changes, throttle_only
from scheduler.records import (
    CancelJob,
    Fact,
    HoldJob,
    JobEnded,
    JobHeld,
    JobReleased,
    JobSpec,
    ReleaseJob,
    ReportJobExit,
    RunKillRequested,
    SubmitJob,
    UpdateJob,
)
from scheduler.requeue.rules import end_outcome, ending_facts
from scheduler.reservations.windows import reservation_gone
from scheduler.scheduling.licenses import check_licenses
from scheduler.shard.model import Hold, Job
from scheduler.shard.reasons import JobState, Rejection, RejectionReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = [
    "decide_cancel",
    "decide_exit",
    "decide_hold",
    "decide_release",
    "decide_submit",
    "decide_update",
    "is_collision",
    "is_known",
]

R = RejectionReason


def is_known(state: ShardState, job_sluid: str) -> bool:
    """True when the SLUID names a job (or array) this shard has, or had, queued."""
    return job_sluid in state.jobs or job_sluid in state.arrays or job_sluid in state.meta.known


def is_collision(state: ShardState, job_sluid: str, nonce: int) -> bool:
    """True when a submission with ``nonce`` under a known ``job_sluid`` is surely not the
    job's own: it has a nonce, and the job (or every live task of the array) another one."""
    if not nonce:
        return False
    jobs = _targets(state, job_sluid)
    if jobs:
        return all(job.nonce != nonce for job in jobs)
    held = state.meta.known.nonce_of(job_sluid) if job_sluid in state.meta.known else 0
    return held not in (0, nonce)  # a purged job: its nonce, if recorded


def decide_submit(state: ShardState, req: SubmitJob, st: Stamper) -> list[Fact]:
    """SubmitJob → JobQueued (one per array task) | JobRejected | nothing for a duplicate."""
    sluid, spec, config = req.job_sluid, req.spec, state.config
    if is_known(state, sluid):
        return _resubmitted(state, req, st)
    minted_ms = sluid_ms(sluid)
    if minted_ms < 0:
        return rejected(st, sluid, R.INVALID_SLUID, f"{sluid!r} is not a SLUID", req.nonce)
    if minted_ms < state.meta.known.floor_ms:
        return rejected(st, sluid, R.STALE_SUBMISSION, f"{sluid} predates the window",
                        req.nonce)
    spec = with_node_count(spec, config, state.nodes.values())  # recorded: replays read it
    if spec is not req.spec:
        req = replace(req, spec=spec)
    problem, parsed = admission_problem(state, req)
    if problem is not None:
        return rejected(st, sluid, problem[0], problem[1], req.nonce)
    if parsed is not None:
        return array_facts(state, req, parsed, st)
    return [queued_fact(st.meta(), config, (sluid, state.meta.next_job_id), spec,
                        submitter=req.submitter, nonce=req.nonce)]


def _resubmitted(state: ShardState, req: SubmitJob, st: Stamper) -> list[Fact]:
    """A SubmitJob for a SLUID this shard knows: a redelivery is silent, anything else refused.

    A retried produce (client, intake or broker redelivery) carries the same SLUID, nonce and
    spec: it gets no fact, so it is harmless however often it comes. With a nonce (``sluice``
    clients send one), the submission is the job's own when the nonce and the job's user are
    the job's: silent; otherwise two clients minted the same SLUID (1/512 for two mints in one
    millisecond): ``SluidInUse``, retryable, carrying the refused submission's nonce so that
    its client, and only it, takes the refusal for its own and submits again under a new SLUID.
    The user is compared so that a nonce others have read (the ledger carries it) cannot pass
    their submission off as a redelivery of someone else's job; it could only be refused.
    Without a nonce (older clients) the spec decides, as before: the same SLUID with another
    spec is another job under a used name, ``DuplicateSubmission``.
    The job compared is the current one (an array: any live task, which all carry the
    submitted spec and nonce); a job purged after MinJobAge keeps only its SLUID and nonce (the
    dedupe window): a submission with another nonce is refused ``SluidInUse``, anything else is
    silent (no spec, no user to compare).
    """
    jobs = _targets(state, req.job_sluid)
    if not jobs:
        if is_collision(state, req.job_sluid, req.nonce):
            return rejected(st, req.job_sluid, R.SLUID_IN_USE,
                            f"{req.job_sluid} was a job's, purged since", req.nonce)
        return []
    if req.nonce:
        if any(job.nonce == req.nonce and job.spec.user == req.spec.user for job in jobs):
            return []
        return rejected(st, req.job_sluid, R.SLUID_IN_USE,
                        f"{req.job_sluid} is job {jobs[0].job_id}, another submission's",
                        req.nonce)
    if any(same_submission(job.spec, req.spec) for job in jobs):
        return []
    return rejected(st, req.job_sluid, R.DUPLICATE_SUBMISSION,
                    f"{req.job_sluid} is job {jobs[0].job_id} with another spec")


def _targets(state: ShardState, job_sluid: str) -> list[Job]:
    """The job itself, or every live task of an array, in job id order."""
    job = state.jobs.get(job_sluid)
    if job is not None:
        return [job]
    tasks = [state.jobs[s] for s in state.arrays.get(job_sluid, ()) if s in state.jobs]
    return sorted(tasks, key=lambda j: j.job_id)


def decide_cancel(state: ShardState, req: CancelJob, st: Stamper) -> list[Fact]:
    """Pending → JobEnded(CANCELLED); running → RunKillRequested(CANCELLED) once. With a
    ``signal`` (scancel -s) other than SIGKILL the job is not cancelled: its processes get the
    signal (:func:`scheduler.jobs.signals.decide_signal`)."""
    if req.step_sluid:  # scancel ID.STEP: one step of the running job
        return decide_step_cancel(state, req, st)
    if req.signal and req.signal != SIGKILL:
        return decide_signal(state, req, _targets(state, req.job_sluid), st)
    facts: list[Fact] = []
    for job in _targets(state, req.job_sluid):
        if not state.may_act_on(req.user, job):
            facts += rejected(st, job.job_sluid, R.ACCESS_DENIED, f"{req.user} may not cancel")
        elif job.is_pending:
            facts.append(cancelled_without_run(st.meta(), job, req.reason))
        elif job.is_running and not job.kill_reason:
            facts.append(
                RunKillRequested(
                    **st.meta(),
                    job_sluid=job.job_sluid,
                    run_sluid=job.run_sluid,
                    reason=JobState.CANCELLED,
                    nodes=job.nodes,
                )
            )
        elif job.is_completing:  # its requeue waits for epilogs: end it, give the nodes back
            facts.append(cancelled_without_run(st.meta(), job, req.reason))
    return facts


def _expediting_locked(state: ShardState, user: str, job: Job) -> bool:
    """Slurm: only privileged users may change an EXPEDITING job."""
    return job.expediting and bool(user) and user not in state.config.scheduler.operators


def decide_hold(state: ShardState, req: HoldJob, st: Stamper) -> list[Fact]:
    """A pending job → JobHeld (an admin hold overrides a user hold, not the reverse)."""
    facts: list[Fact] = []
    for job in _targets(state, req.job_sluid):
        if not job.is_pending:
            if not job.has_ended:
                facts += rejected(st, job.job_sluid, R.JOB_NOT_PENDING, f"job is {job.state}")
            elif job.job_sluid == req.job_sluid:  # one ended job named (an array's: skipped)
                facts += rejected(st, job.job_sluid, R.JOB_FINISHED, f"job is {job.state}")
        elif req.admin and req.user and req.user not in state.config.scheduler.operators:
            facts += rejected(st, job.job_sluid, R.ACCESS_DENIED, f"{req.user} is no operator")
        elif not state.may_act_on(req.user, job):
            facts += rejected(st, job.job_sluid, R.ACCESS_DENIED, f"{req.user} may not hold")
        elif _expediting_locked(state, req.user, job):
            facts += rejected(st, job.job_sluid, R.JOB_EXPEDITING, f"{req.user} may not hold")
        elif job.hold == Hold.ADMIN or (job.hold == Hold.USER and not req.admin):
            continue
        else:
            facts.append(JobHeld(**st.meta(), job_sluid=job.job_sluid, admin=req.admin))
    return facts


def decide_release(state: ShardState, req: ReleaseJob, st: Stamper) -> list[Fact]:
    """A held job → JobReleased; only an operator releases an admin hold.

    A pending job whose reservation was deleted or ended is held by that (Slurm's
    ``RESV_DEL_HOLD``, reason ``ReservationDeleted``), and its user may release it as a hold
    of their own: the release takes the reservation off the job (a ``JobQueued`` of the job
    without it, as ``scontrol update Reservation=`` would) before the ``JobReleased``, so it
    may run on any node, as Slurm's ``_clear_job_resv`` leaves it."""
    facts: list[Fact] = []
    for job in _targets(state, req.job_sluid):
        gone = job.is_pending and reservation_gone(state, job, st.time_ms)
        if not job.is_pending and job.job_sluid == req.job_sluid:  # one job named, as hold's
            why = R.JOB_FINISHED if job.has_ended else R.JOB_NOT_PENDING
            facts += rejected(st, job.job_sluid, why, f"job is {job.state}")
            continue
        if not job.is_pending or (job.hold == Hold.NONE and not gone):
            continue
        operator = not req.user or req.user in state.config.scheduler.operators
        if (job.hold == Hold.ADMIN and not operator) or not state.may_act_on(req.user, job):
            facts += rejected(st, job.job_sluid, R.ACCESS_DENIED, f"{req.user} may not release")
            continue
        if gone:
            facts.append(unreserved_fact(st.meta(), state.config, job))
        facts.append(JobReleased(**st.meta(), job_sluid=job.job_sluid))
    return facts


def decide_update(state: ShardState, req: UpdateJob, st: Stamper) -> list[Fact]:
    """A pending job → JobQueued with the same SLUID and id and the changed spec; a running
    job's time limit → TimeLimitChanged (:mod:`scheduler.jobs.running_updates`); a priority →
    JobPrioritySet or JobHeld (:mod:`scheduler.jobs.priority_updates`)."""
    facts: list[Fact] = []
    for job in _targets(state, req.job_sluid):
        if not state.may_act_on(req.user, job):
            facts += rejected(st, job.job_sluid, R.ACCESS_DENIED, f"{req.user} may not update")
            continue
        if "priority" in req.changes:
            facts += decide_priority_update(state, req, job, st,
                                            lambda hold: decide_hold(state, hold, st))
            continue
        if throttle_only(req.changes) and not job.is_pending and (
                not job.is_running or job.kill_reason):
            continue  # ArrayTaskThrottle: the pending and running tasks take it, not the ended
        if job.is_running:
            facts += decide_running_update(state, req, job, st)
            continue
        if "time_limit_s" in req.changes and (job.has_ended or job.is_completing):
            facts += rejected(st, job.job_sluid, R.JOB_FINISHED, f"job is {job.state}")
            continue
        if not job.is_pending:
            facts += rejected(st, job.job_sluid, R.JOB_NOT_PENDING, f"job is {job.state}")
            continue
        if _expediting_locked(state, req.user, job):
            facts += rejected(st, job.job_sluid, R.JOB_EXPEDITING, f"{req.user} may not update")
            continue
        spec, error = apply_changes(job.spec, req.changes)
        spec = _not_before_fence(job, spec, st.time_ms)
        if not error:
            spec = with_node_count(spec, state.config, state.nodes.values())
        problem = (
            (R.INVALID_UPDATE, error)
            if error
            else _raises_limit(state, req.user, job, spec)
            or check_submission(spec, state.config, state.nodes.values())
            or check_dependency(state, spec.dependency, job)
            or check_licenses(spec, state.config, state.meta.config_texts.get("resources"))
            or (check_reservation(state, spec) if spec.reservation else None)
        )
        if problem is not None:
            facts += rejected(st, job.job_sluid, problem[0], problem[1])
        elif spec != job.spec:
            facts.append(
                queued_fact(
                    st.meta(),
                    state.config,
                    (job.job_sluid, job.job_id),
                    spec,
                    (job.array_job_sluid, job.array_task_id),
                    nonce=job.nonce,
                )
            )
    return facts


def _not_before_fence(job: Job, spec: JobSpec, now_ms: int) -> JobSpec:
    """``spec`` with a begin time no sooner than the fence horizon of the job's last run
    (``requeued_ms + restart_after_ms``, :func:`scheduler.requeue.rules.restart_after_ms`):
    that run's part on a node cut off from the broker may live until then, so an update
    (``scontrol update StartTime=``) cannot make a requeued job start elsewhere sooner."""
    floor = job.requeued_ms + job.restart_after_ms
    if job.requeued_ms <= 0 or job.restart_after_ms <= 0 or floor <= now_ms:
        return spec
    if spec.begin_time_ms >= floor:
        return spec
    return replace(spec, begin_time_ms=floor)


def _raises_limit(
    state: ShardState, user: str, job: Job, spec: JobSpec
) -> tuple[Rejection, str] | None:
    """Slurm: a user may lower a job's time limit, only an operator may raise it (0, no limit,
    is the highest); the limit compared is the one in force (resolved at queueing)."""
    if spec.time_limit_s == job.spec.time_limit_s or not user:
        return None
    if user in state.config.scheduler.operators:
        return None
    old, new = job.time_limit_s, spec.time_limit_s
    if new == 0 or (old and new > old):
        return R.ACCESS_DENIED, (
            f"{user} may lower the time limit, not raise it ({old} s to {new or 'UNLIMITED'} s)"
        )
    return None


def decide_exit(state: ShardState, req: ReportJobExit, st: Stamper) -> list[Fact]:
    """The batch host's exit report of the current run → JobEnded, then the freed nodes' states,
    or, when the job is requeued (:mod:`scheduler.requeue.rules`), what the requeue needs.

    A ``fenced`` report (the node's daemon was cut off from the broker and its supervisors
    killed the run, docs/node-daemon.md) of a run the shard still holds ends it ``NODE_FAIL``,
    requeued as after a node failure; once the shard has ended the run (the node went DOWN) it
    changes nothing, so the job is requeued once, never twice.

    A report whose kill is the node's own ``TIMEOUT`` (the daemon ends a run past its limit
    when the shard's kill does not come: the worker was down then) of a run past its limit by
    the report's time ends it ``TIMEOUT``, as the shard's kill would have; before, it ended
    ``FAILED`` (killed by SIGTERM).

    With ``epilog_done`` (the run is gone from the node and the node has no epilog) the report
    is also that node's ``ReportEpilog(ok)``: a requeue that waits for the node's epilog no
    longer does (:func:`scheduler.jobs.epilog.epilog_with_exit`), also when the run was ended
    otherwise first and its job is COMPLETING (:func:`scheduler.jobs.epilog.epilog_after_end`).
    """
    job = state.jobs.get(req.job_sluid)
    if job is None or job.run_sluid != req.run_sluid or not (job.is_running or job.is_completing):
        return []
    if req.node_sluid != job.node_sluids[0] and req.node_name != job.nodes[0]:
        return []
    if not job.is_running:  # ended otherwise first (a node failure, a missing run)
        return epilog_after_end(state, job, req.node_name, st) if req.epilog_done else []
    if job.kill_reason in (JobState.REQUEUED, JobState.REQUEUE_HOLD):
        final = JobState.REQUEUED
    elif job.kill_reason:
        final = job.kill_reason
    elif req.fenced:  # killed on a node cut off from the broker: a node failure of this run
        final = JobState.NODE_FAIL
    elif req.detail == JobState.TIMEOUT and past_limit(job, st.time_ms):
        final = JobState.TIMEOUT  # its node enforced the limit: the shard's kill never came
    elif req.exit_code == 0 and req.signal == 0:
        final = JobState.COMPLETED
    else:
        final = JobState.FAILED
    end = (final, req.exit_code)
    outcome = end_outcome(state, job, job.kill_reason, end)
    facts: list[Fact] = [
        JobEnded(
            **st.meta(),
            job_sluid=job.job_sluid,
            job_id=job.job_id,
            run_sluid=job.run_sluid,
            state=final,
            exit_code=req.exit_code,
            signal=req.signal,
            reason=req.detail,
            **outcome.fact_fields(),
        )
    ]
    facts += ending_facts(state, job, job.kill_reason, end, st)
    if req.epilog_done:  # the run is gone from its node, which has no epilog: one report
        facts += epilog_with_exit(state, job, end, req.node_name, st)
    return facts

