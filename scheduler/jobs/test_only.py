"""``TestSubmitJob`` → ``JobTestAnswered``: Slurm's ``sbatch --test-only``, decided by the shard.

A test under the SLUID of a job (or array) the shard has or had is refused ``SluidInUse``
without a pass: its answer would stand for the job's decision. Otherwise it is checked exactly
as a submission (:func:`scheduler.jobs.decide.admission_problem`;
its identity was authorized as a ``SubmitJob``'s), so an invalid job gets the reason a
submission would get. A valid one is planned by :func:`scheduler.scheduling.will_run.will_run`
as the job the submission would have queued (:func:`scheduler.jobs.queued.queued_fact`, read
back as ``evolve`` reads it): its start, nodes and CPUs. A job the planner can never start (its
partition has too few usable nodes: DOWN, DRAIN) is answered ``NeverRuns`` with Slurm's words.

The answer is one fact that no fold applies: no job is created, no job id or counter taken (the
fact's own ``shard_seq`` and event SLUID advance the shard's counters, as every fact's do), so
replaying a ledger with answers gives the same state, and re-deciding a test from the same state
gives the same answer.
"""

from __future__ import annotations

from dataclasses import replace

from scheduler.jobs.admission import resolve
from scheduler.jobs.decide import is_known
from scheduler.jobs.node_count import with_node_count
from scheduler.jobs.retention import sluid_ms
from scheduler.jobs.submission_checks import admission_problem
from scheduler.records import Fact, JobSpec, JobTestAnswered, TestSubmitJob
from scheduler.requeue.rules import requeue_policy
from scheduler.scheduling.will_run import will_run
from scheduler.shard.model import Job, job_with
from scheduler.shard.reasons import RejectionReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from scheduler.topology.hostlist import compress

__all__ = ["NEVER_RUNS", "decide_test_submit", "test_job"]

NEVER_RUNS = "NeverRuns"
"""The reason of a valid job no start can be planned for."""
NEVER_RUNS_DETAIL = "Requested node configuration is not available"
"""Slurm's words for it (``ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE``)."""


def decide_test_submit(state: ShardState, req: TestSubmitJob, st: Stamper) -> list[Fact]:
    """The answer to one test: a refusal a submission would get, or its planned start."""
    user = req.spec.user
    if sluid_ms(req.job_sluid) < 0:
        reason = RejectionReason.INVALID_SLUID
        return [_refused(st, req, reason.name, f"{req.job_sluid!r} is not a SLUID")]
    if is_known(state, req.job_sluid):  # a test under a job's SLUID would answer for the job
        reason = RejectionReason.SLUID_IN_USE
        return [_refused(st, req, reason.name, f"{req.job_sluid} is a job's: a test needs a "
                                               "SLUID of its own")]
    spec = with_node_count(req.spec, state.config, state.nodes.values())
    if spec is not req.spec:
        req = replace(req, spec=spec)
    problem, _ = admission_problem(state, req)
    if problem is not None:
        reason, detail = problem
        text = f"{reason.slurm}: {detail}" if reason.slurm else detail
        return [_refused(st, req, reason.name, text)]
    meta = st.meta()
    job = test_job(state, req.spec, req.job_sluid, meta["time_ms"])
    plan = will_run(state, job, meta["time_ms"]) if "," not in job.partition else None
    for name in job.partition.split(",") if "," in job.partition else ():  # -p a,b
        trial = job_with(job, partition=name)
        tried = will_run(state, trial, meta["time_ms"])  # the earliest start of its partitions
        if tried is not None and (plan is None or tried.start_ms < plan.start_ms):
            plan, job = tried, trial
    if plan is None:
        return [JobTestAnswered(**meta, job_sluid=req.job_sluid, nonce=req.nonce, user=user,
                                partition=job.partition, reason=NEVER_RUNS,
                                detail=f"{NEVER_RUNS_DETAIL}: partition {job.partition} has "
                                       f"too few usable nodes for the job")]
    return [
        JobTestAnswered(
            **meta,
            job_sluid=req.job_sluid,
            nonce=req.nonce,
            user=user,
            job_id=job.job_id,
            start_ms=plan.start_ms,
            nodes=compress(list(plan.nodes)),
            cpus=plan.cpus,
            partition=job.partition,
        )
    ]


def test_job(state: ShardState, spec: JobSpec, sluid: str, now_ms: int) -> Job:
    """The job a submission of ``spec`` at ``now_ms`` would have queued (as ``evolve`` builds
    it from the ``JobQueued``), the next job id its would-be id; released (``--hold`` is not
    planned) and, for an array, its first task."""
    resolved = resolve(spec, state.config)
    return Job(
        job_sluid=sluid,
        job_id=state.meta.next_job_id,
        spec=replace(spec, hold=False, array=""),
        submit_ms=now_ms,
        partition=resolved.partition,
        qos=resolved.qos,
        account=resolved.account,
        time_limit_s=resolved.time_limit_s,
        demand=resolved.demand,
        requeue=requeue_policy(spec, state.config),
    )


def _refused(st: Stamper, req: TestSubmitJob, reason: str, detail: str) -> Fact:
    return JobTestAnswered(**st.meta(), job_sluid=req.job_sluid, nonce=req.nonce,
                           user=req.spec.user, reason=reason, detail=detail)
