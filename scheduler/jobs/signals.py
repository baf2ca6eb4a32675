"""Signals to a running job's processes: ``scancel -s SIG`` and ``sbatch --signal``.

Both end in one fact, ``RunSignalled`` (job, run, nodes, signal, scope, reason, requester),
from which :func:`scheduler.commands.node_commands` derives one ``SignalRun`` per node of the
run. The job is not cancelled: its processes get the signal and decide what to do with it.

- :func:`decide_signal` (a ``CancelJob`` with ``signal`` set, authorized as a cancel): a running
  job that is not being killed → ``RunSignalled(REQUESTED)``; otherwise a ``RequestDenied``:
  ``JobPending`` (Slurm: "Job is pending execution"), ``JobNotRunning`` (Slurm: "Job/step
  already completing or completed"), ``InvalidSignal``, ``NotOwner``, or ``SignalUnsupported``
  for a run on the Kubernetes bridge's nodes (Kubernetes has no way to signal a pod's
  processes; a cancel deletes the pods). Signal 9 (SIGKILL) is
  Slurm's cancel and is decided as one, by the caller.
- :func:`time_limit_signals` (the scheduling pass, beside the time limits): a run whose job asked
  for ``--signal=[{R|B}:]SIG[@SECONDS]`` gets ``RunSignalled(TIME_LIMIT)`` at the first pass at
  or after ``start + time_limit - SECONDS`` (60 s when not given), once: the fact sets the job's
  ``limit_signalled``, which the next run's ``JobStarted`` clears, so a replay or a restarted
  shard neither sends it again nor loses it.

Names and specs are parsed by :mod:`scheduler.jobs.signal_names`. Nothing here reads a clock.
"""

from __future__ import annotations

from typing import Final

from scheduler.jobs.signal_names import (
    MAX_SIGNAL,
    SIGKILL,
    SignalScope,
    SignalSpec,
    parse_signal_spec,
)
from scheduler.records import CancelJob, Fact, RequestDenied, RunSignalled
from scheduler.shard.model import KUBERNETES_FEATURE, Job, Step
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = [
    "SIGKILL",
    "SignalDenial",
    "SignalReason",
    "SignalScope",
    "decide_signal",
    "signal_step",
    "time_limit_signals",
]


class SignalReason:
    """Why a run was signalled (``RunSignalled.reason``)."""

    REQUESTED: Final = "REQUESTED"
    TIME_LIMIT: Final = "TIME_LIMIT"


class SignalDenial:
    """Named reasons of a refused signal (``RequestDenied.reason``, request ``CancelJob``)."""

    JOB_PENDING: Final = "JobPending"
    JOB_NOT_RUNNING: Final = "JobNotRunning"
    INVALID_SIGNAL: Final = "InvalidSignal"
    NOT_OWNER: Final = "NotOwner"
    UNSUPPORTED: Final = "SignalUnsupported"


def _denied(st: Stamper, req: CancelJob, job: Job, reason: str, detail: str) -> list[Fact]:
    return [RequestDenied(**st.meta(), request="CancelJob", subject_sluid=job.job_sluid,
                          requester=req.user, reason=reason, detail=detail)]


def _signalled(st: Stamper, job: Job, signal: int, scope: str, reason: str,
               requester: str) -> RunSignalled:
    return RunSignalled(**st.meta(), job_sluid=job.job_sluid, run_sluid=job.run_sluid,
                        nodes=job.nodes, signal=signal, scope=scope, reason=reason,
                        requester=requester)


def decide_signal(state: ShardState, req: CancelJob, jobs: list[Job], st: Stamper) -> list[Fact]:
    """A ``CancelJob`` with a signal, for each job it names (an array: each live task) →
    ``RunSignalled`` | ``RequestDenied``; the rules are the module docstring's. With
    ``step_sluid`` (scancel -s ID.STEP, srun passing a signal on), only that step's tasks get
    it, on the nodes still running them (:func:`signal_step`)."""
    facts: list[Fact] = []
    scope = req.signal_scope or SignalScope.STEPS
    for job in jobs:
        refusal = _refusal(state, req, job, scope)
        if refusal is not None:
            facts += _denied(st, req, job, *refusal)
        else:
            facts.append(_signalled(st, job, req.signal, scope, SignalReason.REQUESTED,
                                    req.user))
    return facts


def signal_step(state: ShardState, req: CancelJob, job: Job, step: Step, st: Stamper,
                ) -> list[Fact]:
    """A signal for one running step's tasks → ``RunSignalled`` naming the step and the nodes
    still running it | ``RequestDenied`` (the job's own refusals)."""
    refusal = _refusal(state, req, job, SignalScope.STEPS)
    if refusal is not None:
        return _denied(st, req, job, *refusal)
    nodes = tuple(n for n in step.nodes if n not in step.exited)
    return [RunSignalled(**st.meta(), job_sluid=job.job_sluid, run_sluid=job.run_sluid,
                         nodes=nodes, signal=req.signal, scope=SignalScope.STEPS,
                         reason=SignalReason.REQUESTED, requester=req.user,
                         step_sluid=step.step_sluid)]


def _refusal(state: ShardState, req: CancelJob, job: Job, scope: str) -> tuple[str, str] | None:
    """Why ``job`` may not get ``req``'s signal (reason, detail), or None."""
    if not state.may_act_on(req.user, job):
        return SignalDenial.NOT_OWNER, f"{req.user} may not signal job {job.job_id}"
    if not 1 <= req.signal <= MAX_SIGNAL or scope not in SignalScope.ALL:
        return SignalDenial.INVALID_SIGNAL, (f"signal {req.signal} scope {scope[:16]!r}: "
                                             f"Invalid signal (1-{MAX_SIGNAL}; scope STEPS, "
                                             "BATCH or FULL)")
    if job.is_pending:
        return SignalDenial.JOB_PENDING, (f"Job is pending execution: job {job.job_id} has "
                                          "no processes")
    if not job.is_running or job.kill_reason:
        what = f"being killed ({job.kill_reason})" if job.kill_reason else job.state
        return SignalDenial.JOB_NOT_RUNNING, (f"Job/step already completing or completed: job "
                                              f"{job.job_id} is {what}")
    if _on_kubernetes(state, job):
        return SignalDenial.UNSUPPORTED, (f"job {job.job_id} runs as Kubernetes pods, which "
                                          "cannot be signalled; a cancel without a signal "
                                          "deletes them")
    return None


def _on_kubernetes(state: ShardState, job: Job) -> bool:
    """Whether the job's run is on the Kubernetes bridge's nodes (their feature)."""
    nodes = state.nodes
    return any(KUBERNETES_FEATURE in nodes[s].features for s in job.node_sluids if s in nodes)


def time_limit_signals(state: ShardState, st: Stamper) -> list[Fact]:
    """``RunSignalled(TIME_LIMIT)`` for every run whose ``--signal`` warning is due at
    ``st.time_ms`` and was not sent (by due time, then job id); only the runs the state files
    as ``signalling`` are looked at, not every running job. A run being killed gets none;
    a run with no time limit none; a ``--signal`` the core cannot parse none (it was refused at
    submission by the CLI and the admission; an older job's is recorded only)."""
    if not state.signalling:  # the common case: no run with a --signal still to send
        return []
    now, jobs = st.time_ms, state.jobs
    due: list[tuple[int, int, Job, SignalSpec]] = []
    for sluid in sorted(state.signalling):  # running, with a --signal not yet sent
        job = jobs[sluid]
        if job.kill_reason or job.time_limit_s <= 0:
            continue
        spec = parse_signal_spec(job.spec.signal)
        if spec is None:
            continue
        at = job.start_ms + (job.time_limit_s - spec.seconds) * 1000
        if at <= now:
            due.append((at, job.job_id, job, spec))
    due.sort(key=lambda d: (d[0], d[1]))
    return [_signalled(st, job, spec.signal, spec.scope, SignalReason.TIME_LIMIT, "")
            for _, _, job, spec in due]
