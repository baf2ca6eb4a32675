"""``RequeueJob``: an operator or the job's owner requeues a running job (``scontrol requeue``,
``scontrol requeuehold`` with ``hold``).

The run is killed on every node (``RunKillRequested(REQUEUED)``, or ``REQUEUE_HOLD``); when the
batch host reports its exit the run ends ``JobEnded(REQUEUED)``, the job waits COMPLETING for
the epilogs, then ``JobRequeued(reason=ADMIN)`` — held with ``hold`` (``JobHeldUser``), else
eligible after ``requeue_delay`` (now for a job with the expedite flag). An administrator's
requeue does not count toward ``MaxBatchRequeue`` (as in Slurm).

Refused with a ``JobRejected``: someone else's job (``AccessDenied``), a job that may not be
requeued (``RequeueDisabled``: ``--no-requeue``, or ``JobRequeue=0`` without ``--requeue``), a job
that is not running or is being killed for another reason (``JobNotRunning``). A second request
while the requeue kill is in progress decides nothing.
"""

from __future__ import annotations

from scheduler.jobs.rejected import rejected
from scheduler.nodes.admin import is_operator
from scheduler.records import Fact, RequeueJob, RunKillRequested
from scheduler.shard.reasons import JobState, RejectionReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["decide_requeue"]

R = RejectionReason


def decide_requeue(state: ShardState, req: RequeueJob, st: Stamper) -> list[Fact]:
    """RequeueJob → RunKillRequested(REQUEUED | REQUEUE_HOLD), or a rejection."""
    tasks = state.arrays.get(req.job_sluid, ())
    sluids = (
        [req.job_sluid] if req.job_sluid in state.jobs else [s for s in tasks if s in state.jobs]
    )
    jobs = sorted((state.jobs[s] for s in sluids), key=lambda j: j.job_id)
    facts: list[Fact] = []
    for job in jobs:
        if req.user and req.user != job.spec.user and not is_operator(state, req.user):
            facts += rejected(st, job.job_sluid, R.ACCESS_DENIED, f"{req.user} may not requeue")
        elif job.requeue == "no":
            facts += rejected(st, job.job_sluid, R.REQUEUE_DISABLED, "submitted with no requeue")
        elif job.kill_reason in (JobState.REQUEUED, JobState.REQUEUE_HOLD):
            continue
        elif not job.is_running or job.kill_reason:
            what = f"being killed ({job.kill_reason})" if job.kill_reason else job.state
            facts += rejected(st, job.job_sluid, R.JOB_NOT_RUNNING, f"job is {what}")
        else:
            kill = JobState.REQUEUE_HOLD if req.hold else JobState.REQUEUED
            facts.append(
                RunKillRequested(
                    **st.meta(),
                    job_sluid=job.job_sluid,
                    run_sluid=job.run_sluid,
                    reason=kill,
                    nodes=job.nodes,
                )
            )
    return facts
