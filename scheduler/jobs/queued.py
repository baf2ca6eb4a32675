"""``JobQueued``: the fact of an accepted submission (or update), with what the core resolved.

The fact carries, besides the spec as written, what admission decided from it and the
configuration in force (:func:`scheduler.jobs.admission.resolve` and
:func:`scheduler.requeue.rules.requeue_policy`): the partition, QOS, account, effective time limit,
requeue policy and per-node CPU demand, so a reader of the ledger never re-applies the core's
defaults. ``evolve`` resolves the same spec
under the same configuration and gets the same answer.
"""

from __future__ import annotations

from dataclasses import replace

from scheduler.config.model import ClusterConfig
from scheduler.jobs.admission import resolve
from scheduler.records import JobQueued, JobSpec
from scheduler.requeue.rules import requeue_policy
from scheduler.shard.model import Job
from scheduler.shard.stamp import Meta

__all__ = ["queued_fact", "unreserved_fact"]


def queued_fact(
    meta: Meta,
    config: ClusterConfig,
    job: tuple[str, int],
    spec: JobSpec,
    array: tuple[str, int] = ("", -1),
    submitter: str = "",
    nonce: int = 0,
) -> JobQueued:
    """The ``JobQueued`` of job ``(sluid, id)`` with ``spec`` under ``config`` (``array`` is the
    array job's SLUID and the task id, for an array task; ``submitter`` the administrator who
    submitted it for ``spec.user``, "" when the user did; ``nonce`` the submission's)."""
    resolved = resolve(spec, config)
    return JobQueued(
        **meta,
        job_sluid=job[0],
        job_id=job[1],
        spec=spec,
        array_job_sluid=array[0],
        array_task_id=array[1],
        partition=resolved.partition,
        qos=resolved.qos,
        account=resolved.account,
        time_limit_s=resolved.time_limit_s,
        requeue=requeue_policy(spec, config),
        cpus_per_node=resolved.demand.cpus,
        submitter=submitter,
        nonce=nonce,
    )


def unreserved_fact(meta: Meta, config: ClusterConfig, job: Job) -> JobQueued:
    """The ``JobQueued`` of pending ``job`` without its reservation: an update, as ``scontrol
    update JobId=N Reservation=`` makes (its reservation was deleted or ended, and it is
    released, or the reservation let its jobs go: ``NO_HOLD_JOBS_AFTER_END``)."""
    return queued_fact(meta, config, (job.job_sluid, job.job_id),
                       replace(job.spec, reservation=""),
                       (job.array_job_sluid, job.array_task_id), nonce=job.nonce)
