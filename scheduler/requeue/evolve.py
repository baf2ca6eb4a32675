"""Folding the requeue facts (part of :func:`scheduler.evolve`, its only writer).

- ``JobEnded`` of a run whose requeue is pending
  (:func:`scheduler.requeue.rules.end_requeue_reason`): the job becomes COMPLETING, keeps the run's
  nodes that are not DOWN (in the node index too) and waits for their epilogs;
- ``JobExpediting``: the job is EXPEDITING (and, as Slurm forces it, ``epilog_failed``);
- ``NodeEpilogCompleted``: the node is no longer awaited; a failed epilog marks the job;
  a job that does not defer its release gives the node back now;
- ``JobRequeued``: the job is pending again and gives back every node it still held; a job
  submitted to several partitions (``-p a,b``) waits under its list again (Slurm keeps its
  ``part_ptr_list``), unless expedited (a hot swap keeps the partition of its kept nodes).

Each handler changes only the job its fact names (and the derived node index).
"""

from __future__ import annotations

from scheduler.jobs.partition_list import partition_names, tier_ordered
from scheduler.records import JobEnded, JobExpediting, JobRequeued, NodeEpilogCompleted
from scheduler.requeue.rules import defers_release, end_requeue_reason, held_after_end, requeued_job
from scheduler.scheduling.fairshare import charge_usage
from scheduler.shard.model import Job, held_view, job_with
from scheduler.shard.reasons import JobState
from scheduler.shard.state import ShardState

__all__ = ["end_with_requeue", "job_expediting", "job_requeued", "node_epilog_completed"]


def _rehold(state: ShardState, job: Job) -> None:
    """Make the node index hold exactly what ``job`` holds (``job.held``, or its run)."""
    index = state.built_index()
    if index is None:
        return
    index.release(job)
    if job.is_running:
        index.allocate(job)
    elif job.held:
        index.allocate(held_view(job, job.held))


def end_with_requeue(state: ShardState, job: Job, fact: JobEnded) -> bool:
    """Fold a ``JobEnded`` that leaves ``job`` COMPLETING; False when the job really ends."""
    if not job.is_running or fact.run_sluid != job.run_sluid:
        return False
    reason = end_requeue_reason(
        job, job.kill_reason, fact.state, fact.exit_code, state.config.requeue
    )
    if not reason:
        return False
    charge_usage(state.meta, state.config, job, fact.time_ms)
    held = held_after_end(state, job)
    job = job_with(
        job,
        state=JobState.COMPLETING,
        end_ms=fact.time_ms,
        exit_code=fact.exit_code,
        signal=fact.signal,
        reason=fact.reason or job.reason,
        requeue_reason=reason,
        completing=held,
        held=held,
        missing=(),  # a COMPLETING job's epilogs are missed afresh (scheduler.nodes.missing_runs)
    )
    state.jobs[job.job_sluid] = job
    state.track(job)
    _rehold(state, job)
    return True


def job_expediting(state: ShardState, fact: JobExpediting) -> None:
    job = state.jobs.get(fact.job_sluid)
    if job is not None and job.run_sluid == fact.run_sluid and not job.has_ended:
        state.jobs[job.job_sluid] = job_with(job, expediting=True, epilog_failed=True)


def node_epilog_completed(state: ShardState, fact: NodeEpilogCompleted) -> None:
    job = state.jobs.get(fact.job_sluid)
    if (
        job is None
        or not job.is_completing
        or job.run_sluid != fact.run_sluid
        or fact.name not in job.completing
    ):
        return
    held = job.held if defers_release(job) else tuple(n for n in job.held if n != fact.name)
    job = job_with(
        job,
        completing=tuple(n for n in job.completing if n != fact.name),
        held=held,
        epilog_failed=job.epilog_failed or not fact.ok,
    )
    state.jobs[job.job_sluid] = job
    _rehold(state, job)


def job_requeued(state: ShardState, fact: JobRequeued) -> None:
    job = state.jobs.get(fact.job_sluid)
    if job is None or not job.is_completing or job.run_sluid != fact.run_sluid:
        return
    job = requeued_job(job, fact)
    if "," in job.spec.partition and not fact.expedite:  # -p a,b: every partition again
        listed = tier_ordered(partition_names(job.spec.partition), state.config)
        job = job_with(job, partition=listed)
    state.jobs[job.job_sluid] = job
    state.track(job)
    _rehold(state, job)
