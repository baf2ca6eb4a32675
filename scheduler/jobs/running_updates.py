"""Updating a running job: ``scontrol update JobId=N TimeLimit=…`` → ``TimeLimitChanged``.

Slurm's rule (``_update_job`` in slurmctld's ``job_mgr.c``): an operator (or administrator)
may set any limit; the job's owner may only lower it (``UNLIMITED``, 0 here, is the highest),
else ``Access/permission denied``. A job being killed or already ended cannot change
(``Job has already finished``); only the time limit of a running job may
change (any other field: ``Job is no longer pending execution``). The same limit again is no
change (no fact). The run then ends at ``start + new limit``: the next pass's timeout rule
(:func:`scheduler.scheduling.timeouts.due_kills`) kills it when that is already past, as
Slurm sets the end to ``now``; the nodes get ``SetRunLimit`` (their own enforcement follows
the new limit).
"""

from __future__ import annotations

from dataclasses import replace

from scheduler.jobs.rejected import rejected
from scheduler.jobs.updates import apply_changes
from scheduler.records import Fact, TimeLimitChanged, UpdateJob
from scheduler.shard.model import Job, job_with
from scheduler.shard.reasons import RejectionReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from schemas.ranges import MAX_TIME_LIMIT_S

__all__ = ["decide_running_update", "past_limit", "time_limit_changed"]

R = RejectionReason


def decide_running_update(state: ShardState, req: UpdateJob, job: Job,
                          st: Stamper) -> list[Fact]:
    """A running job's ``UpdateJob`` → ``TimeLimitChanged`` | ``JobRejected`` | nothing (the
    same limit). The caller has checked that ``req.user`` may act on the job."""
    if set(req.changes) != {"time_limit_s"}:
        other = ", ".join(sorted(set(req.changes) - {"time_limit_s"}))
        return rejected(st, job.job_sluid, R.JOB_NOT_PENDING,
                        f"job is {job.state}: only its time limit can change, not {other}")
    if job.kill_reason:
        return rejected(st, job.job_sluid, R.JOB_FINISHED,
                        f"job is being killed ({job.kill_reason})")
    spec, error = apply_changes(job.spec, req.changes)
    if error:
        return rejected(st, job.job_sluid, R.INVALID_UPDATE, error)
    old, new = job.time_limit_s, spec.time_limit_s
    if not 0 <= new <= MAX_TIME_LIMIT_S:
        return rejected(st, job.job_sluid, R.INVALID_TIME_LIMIT, f"time limit {new} s")
    if new == old:
        return []
    operator = not req.user or req.user in state.config.scheduler.operators
    if not operator and (new == 0 or (old and new > old)):
        return rejected(st, job.job_sluid, R.ACCESS_DENIED,
                        f"{req.user} may lower the time limit, not raise it "
                        f"({old or 'UNLIMITED'} s to {new or 'UNLIMITED'} s)")
    return [TimeLimitChanged(**st.meta(), job_sluid=job.job_sluid, run_sluid=job.run_sluid,
                             nodes=job.nodes, time_limit_s=new, previous_s=old,
                             requester=req.user)]


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
