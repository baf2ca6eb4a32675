"""``scontrol update JobId=N Priority=P`` → ``JobPrioritySet`` | ``JobHeld`` | ``JobRejected``.

Slurm's rule (``_update_job``, ``job_mgr.c``), for a pending job:

- ``Priority=0`` holds it: an administrator hold (``JobHeldAdmin``) when an operator asks, a
  user hold (``JobHeldUser``) when its owner does;
- any other value is an operator's: the job keeps that priority instead of its multifactor one
  (Slurm's ``direct_set_prio``; the scheduler orders by it). A held job must be released first
  (``Job is in held state, pending scheduler release``). The owner is refused
  (``Access/permission denied``): Slurm lets an owner lower it for one scheduling cycle, with
  ``Changes to job priority are not persistent, change nice instead``; here ``nice`` does that.

``Priority`` changes alone (with other fields in the same update: ``InvalidUpdate``); a running
job's priority is not changed (``Job is no longer pending execution``; Slurm records it), an
ended job's neither (``Job has already finished``).
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler.jobs.rejected import rejected
from scheduler.records import Fact, HoldJob, JobPrioritySet, UpdateJob
from scheduler.scheduling.priority import PRIORITY_MAX
from scheduler.shard.model import Hold, Job, job_with
from scheduler.shard.reasons import RejectionReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from schemas.digits import ascii_integer

__all__ = ["decide_priority_update", "job_priority_set"]

R = RejectionReason


def decide_priority_update(state: ShardState, req: UpdateJob, job: Job, st: Stamper,
                           hold: Callable[[HoldJob], list[Fact]]) -> list[Fact]:
    """An ``UpdateJob`` naming ``priority`` for one job the user may act on (the caller checked
    :meth:`ShardState.may_act_on`); ``hold`` decides a ``HoldJob`` (``Priority=0``)."""
    if set(req.changes) != {"priority"}:
        return rejected(st, job.job_sluid, R.INVALID_UPDATE, "Priority is updated alone")
    text = req.changes["priority"].strip()
    value = ascii_integer(text)
    if value is None or not 0 <= value < PRIORITY_MAX:
        return rejected(st, job.job_sluid, R.INVALID_UPDATE, f"Invalid Priority value: {text[:40]}")
    if job.has_ended or job.is_completing:
        return rejected(st, job.job_sluid, R.JOB_FINISHED, f"job is {job.state}")
    if not job.is_pending:
        return rejected(st, job.job_sluid, R.JOB_NOT_PENDING, f"job is {job.state}")
    operator = not req.user or req.user in state.config.scheduler.operators
    if value == 0:  # Slurm's hold by priority: the hold request's own rules
        return hold(HoldJob(job_sluid=job.job_sluid, user=req.user, admin=operator))
    if not operator:
        return rejected(st, job.job_sluid, R.ACCESS_DENIED,
                        f"{req.user} may not set a priority (an operator's; change nice "
                        "instead)")
    if job.hold != Hold.NONE:
        return rejected(st, job.job_sluid, R.JOB_HELD,
                        f"job is held ({job.hold}): release it first")
    if value == job.admin_priority:
        return []
    return [JobPrioritySet(**st.meta(), job_sluid=job.job_sluid, priority=value)]


def job_priority_set(state: ShardState, fact: JobPrioritySet) -> None:
    """The fold (evolve's): a pending job keeps the operator's priority (filed out of order, so
    the pass sorts by priorities)."""
    job = state.jobs.get(fact.job_sluid)
    if job is not None and job.is_pending:
        job = state.jobs[job.job_sluid] = job_with(job, admin_priority=fact.priority)
        state.file_flags(job)
