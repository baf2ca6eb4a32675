"""Signals to a running job's processes: ``scancel -s SIG`` and ``sbatch --signal``.

Both end in one fact, ``RunSignalled`` (job, run, nodes, signal, scope, reason, requester),
from which :func:`scheduler.commands.node_commands` derives one ``SignalRun`` per node of the
run. The job is not cancelled: its processes get the signal and decide what to do with it.

- :func:`decide_signal` (a ``CancelJob`` with ``signal`` set, authorized as a cancel): a running
  job that is not being killed → ``RunSignalled(REQUESTED)``; otherwise a ``RequestDenied``:
  ``JobPending`` (Slurm: "Job is pending execution"), ``JobNotRunning`` (Slurm: "Job/step
  already completing or completed"), ``InvalidSignal``, or ``NotOwner``. Signal 9 (SIGKILL) is
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
from scheduler.shard.model import Job
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = [
    "SIGKILL",
    "SignalDenial",
    "SignalReason",
    "SignalScope",
    "decide_signal",
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
    ``RunSignalled`` | ``RequestDenied``; the rules are the module docstring's."""
    facts: list[Fact] = []
    scope = req.signal_scope or SignalScope.STEPS
    for job in jobs:
        if req.user and req.user != job.spec.user and (
                req.user not in state.config.scheduler.operators):
            facts += _denied(st, req, job, SignalDenial.NOT_OWNER,
                             f"{req.user} may not signal job {job.job_id}")
        elif not 1 <= req.signal <= MAX_SIGNAL or scope not in SignalScope.ALL:
            facts += _denied(st, req, job, SignalDenial.INVALID_SIGNAL,
                             f"signal {req.signal} scope {scope[:16]!r}: Invalid signal "
                             f"(1-{MAX_SIGNAL}; scope STEPS, BATCH or FULL)")
        elif job.is_pending:
            facts += _denied(st, req, job, SignalDenial.JOB_PENDING,
                             f"Job is pending execution: job {job.job_id} has no processes")
        elif not job.is_running or job.kill_reason:
            what = f"being killed ({job.kill_reason})" if job.kill_reason else job.state
            facts += _denied(st, req, job, SignalDenial.JOB_NOT_RUNNING,
                             f"Job/step already completing or completed: job {job.job_id} "
                             f"is {what}")
        else:
            facts.append(_signalled(st, job, req.signal, scope, SignalReason.REQUESTED,
                                    req.user))
    return facts


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
