"""Updating a running job: ``scontrol update JobId=N TimeLimit=…`` → ``TimeLimitChanged``;
``JobName=``, ``Comment=``, ``MailType=``, ``MailUser=``, ``Nice=``, ``Requeue=`` and an array's
``ArrayTaskThrottle=`` → ``JobDetailsChanged``.

Slurm's rules (``_update_job`` in slurmctld's ``job_mgr.c``): an operator (or administrator)
may set any limit; the job's owner may only lower it (``UNLIMITED``, 0 here, is the highest),
else ``Access/permission denied``. The name, comment and mail settings change whenever the
job has not finished, by its owner too; so do the nice (a negative one is an operator's: the
intake's authorization) and the requeue setting (``Requeue=0|1``: whether a node failure or
``scontrol requeue`` requeues the job; the next requeue decision reads it; a run launched not
requeueable stays so, see :func:`_requeue_problem`). A job being killed or already ended cannot
change (``Job has already finished``); any other field of a running job is refused (``Job is no
longer pending execution``), and so is the whole request: nothing of it applies. The same
values again are no change (no fact). The run then ends at ``start + new limit``: the next
pass's timeout rule (:func:`scheduler.scheduling.timeouts.due_kills`) kills it when that is
already past, as Slurm sets the end to ``now``; the nodes get ``SetRunLimit`` (their own
enforcement follows the new limit). A new name counts at once for ``--dependency=singleton``
(the pass reads the running jobs' names). ``ArrayTaskThrottle`` is one value for the whole
array in Slurm (the array's record); here each task's ``%N`` is set, the running ones' too, so
a task requeued later, and ``scontrol show job`` of any task, has the array's limit.
"""

from __future__ import annotations

from dataclasses import replace

from scheduler.jobs.ranges import spec_range_problem
from scheduler.jobs.rejected import rejected
from scheduler.jobs.updates import apply_changes
from scheduler.records import Fact, JobDetailsChanged, JobSpec, TimeLimitChanged, UpdateJob
from scheduler.requeue.rules import requeue_policy
from scheduler.shard.model import Job, job_with
from scheduler.shard.reasons import Rejection, RejectionReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from schemas.ranges import MAX_TIME_LIMIT_S

__all__ = [
    "RUNNING_FIELDS", "decide_running_update", "job_details_changed", "past_limit",
    "time_limit_changed",
]

R = RejectionReason

DETAIL_FIELDS = ("admin_comment", "array", "comment", "extra", "mail_type", "mail_user", "name",
                 "nice", "requeue")
"""What a running job's update may change besides its time limit (sorted; ``array`` only its
``%N``: :func:`scheduler.jobs.updates.apply_changes`)."""
RUNNING_FIELDS = frozenset({"time_limit_s", *DETAIL_FIELDS})


def decide_running_update(state: ShardState, req: UpdateJob, job: Job,
                          st: Stamper) -> list[Fact]:
    """A running job's ``UpdateJob`` → ``JobDetailsChanged`` and/or ``TimeLimitChanged`` |
    ``JobRejected`` | nothing (the same values). The caller has checked that ``req.user`` may
    act on the job."""
    other = sorted(set(req.changes) - RUNNING_FIELDS)
    if other:
        return rejected(st, job.job_sluid, R.JOB_NOT_PENDING,
                        f"job is {job.state}: only its time limit, name, comment, "
                        "AdminComment, Extra, mail settings, nice and requeue can change, not "
                        f"{', '.join(other)}")
    if job.kill_reason:
        return rejected(st, job.job_sluid, R.JOB_FINISHED,
                        f"job is being killed ({job.kill_reason})")
    spec, error = apply_changes(job.spec, req.changes)
    if not error and "requeue" in req.changes:
        error = _requeue_problem(job, spec.requeue)
    if error:
        return rejected(st, job.job_sluid, R.INVALID_UPDATE, error)
    problem = spec_range_problem(spec) or _limit_problem(state, req, job, spec)
    if problem is not None:
        return rejected(st, job.job_sluid, problem[0], problem[1])
    facts: list[Fact] = []
    changed = [f for f in DETAIL_FIELDS if getattr(spec, f) != getattr(job.spec, f)]
    if changed:
        facts.append(JobDetailsChanged(
            **st.meta(), job_sluid=job.job_sluid, run_sluid=job.run_sluid, name=spec.name,
            comment=spec.comment, mail_type=spec.mail_type, mail_user=spec.mail_user,
            array=spec.array, nice=spec.nice, requeue=spec.requeue, changed=tuple(changed),
            requester=req.user, admin_comment=spec.admin_comment, extra=spec.extra))
    old, new = job.time_limit_s, spec.time_limit_s
    if "time_limit_s" in req.changes and new != old:
        facts.append(TimeLimitChanged(**st.meta(), job_sluid=job.job_sluid,
                                      run_sluid=job.run_sluid, nodes=job.nodes,
                                      time_limit_s=new, previous_s=old, requester=req.user))
    return facts


def _limit_problem(state: ShardState, req: UpdateJob, job: Job,
                   spec: JobSpec) -> tuple[Rejection, str] | None:
    """Why the running job's time limit may not become ``spec``'s, or None (none asked)."""
    if "time_limit_s" not in req.changes:
        return None
    user, old, new = req.user, job.time_limit_s, spec.time_limit_s
    if not 0 <= new <= MAX_TIME_LIMIT_S:
        return R.INVALID_TIME_LIMIT, f"time limit {new} s"
    if new == old:
        return None
    operator = not user or user in state.config.scheduler.operators
    if not operator and (new == 0 or (old and new > old)):
        return R.ACCESS_DENIED, (f"{user} may lower the time limit, not raise it "
                                 f"({old or 'UNLIMITED'} s to {new or 'UNLIMITED'} s)")
    return None


def _requeue_problem(job: Job, requeue: str) -> str:
    """Why a running job's requeue setting may not become ``requeue`` ("" when it may). A run
    launched as not requeued is never fenced on its node (``LaunchRun.restart_after_ms`` -1:
    docs/node-daemon.md), so it may not become requeueable while it runs: a node cut off from
    the broker would keep running it while the requeued job ran elsewhere."""
    if requeue not in ("yes", "no"):
        return f"requeue {requeue!r}: yes or no while the job runs"
    if requeue == "yes" and job.requeue != "yes" and job.restart_after_ms < 0:
        return ("Requeue=1: this run was launched not requeueable (its nodes do not fence it); "
                "it may become requeueable while pending")
    return ""


def job_details_changed(state: ShardState, fact: JobDetailsChanged) -> None:
    """The fold (evolve's): the running job's spec takes the fact's name, comment, mail
    settings and array text, and its nice and requeue setting when the fact changed them (a v7
    fact carries neither); the job's requeue policy follows its spec's."""
    job = state.jobs.get(fact.job_sluid)
    if job is None or not job.is_running or job.run_sluid != fact.run_sluid:
        return
    spec = replace(job.spec, name=fact.name, comment=fact.comment, mail_type=fact.mail_type,
                   mail_user=fact.mail_user, array=fact.array)
    if "nice" in fact.changed:
        spec = replace(spec, nice=fact.nice)
    if "admin_comment" in fact.changed:
        spec = replace(spec, admin_comment=fact.admin_comment)
    if "extra" in fact.changed:
        spec = replace(spec, extra=fact.extra)
    if "requeue" in fact.changed:
        spec = replace(spec, requeue=fact.requeue)
        job = job_with(job, requeue=requeue_policy(spec, state.config))
    state.jobs[job.job_sluid] = job_with(job, spec=spec)


def time_limit_changed(state: ShardState, fact: TimeLimitChanged) -> None:
    """The fold (evolve's): the running job's limit, and its spec's (which a requeue keeps, as
    Slurm's), is the new one; the index's raw end of its run moves with it."""
    job = state.jobs.get(fact.job_sluid)
    if job is None or not job.is_running or job.run_sluid != fact.run_sluid:
        return
    spec = replace(job.spec, time_limit_s=fact.time_limit_s)
    job = job_with(job, time_limit_s=fact.time_limit_s, spec=spec)
    state.jobs[job.job_sluid] = job
    index = state.built_index()
    if index is not None:
        index.run_end_moved(job)


def past_limit(job: Job, time_ms: int) -> bool:
    """Whether ``job``'s run is past its time limit at ``time_ms`` (a node's own ``TIMEOUT``
    kill is believed only then: :func:`scheduler.jobs.decide.decide_exit`)."""
    return job.time_limit_s > 0 and time_ms >= job.start_ms + job.time_limit_s * 1000
