"""The checks a submission must pass before it is queued (:func:`admission_problem`): shared by
``SubmitJob`` (:func:`scheduler.jobs.decide.decide_submit`) and ``TestSubmitJob`` (sbatch
--test-only, :mod:`scheduler.jobs.test_only`), so a test is refused for what a submission would
be; ``UpdateJob`` checks the dependency of its new spec the same way (:func:`check_dependency`).
"""

from __future__ import annotations

from scheduler.jobs.admission import check_submission, resolve
from scheduler.jobs.arrays import ArraySpec, parse_array
from scheduler.jobs.dependencies import dependency_problem
from scheduler.records import JobSpec, SubmitJob, TestSubmitJob
from scheduler.scheduling.assoc import assoc_table, submit_problem
from scheduler.scheduling.licenses import check_licenses
from scheduler.shard.model import Job
from scheduler.shard.reasons import Rejection, RejectionReason
from scheduler.shard.state import ShardState

__all__ = ["admission_problem", "check_dependency", "check_reservation"]

R = RejectionReason


def admission_problem(
    state: ShardState, req: SubmitJob | TestSubmitJob
) -> tuple[tuple[Rejection, str] | None, ArraySpec | None]:
    """What a submission of ``req.spec`` would be refused for (None: nothing), and its parsed
    array: the checks of ``decide_submit`` after the SLUID's, shared with ``sbatch
    --test-only`` (:mod:`scheduler.jobs.test_only`) so that a test gets a submission's refusal."""
    spec, config = req.spec, state.config
    problem = check_submission(spec, config, state.nodes.values())
    parsed = parse_array(spec.array, config.scheduler.max_array_size) if spec.array else None
    if problem is None and spec.array and parsed is None:
        problem = R.INVALID_ARRAY, f"array {spec.array!r}"
    if problem is None and spec.reservation:
        problem = check_reservation(state, spec)
    if problem is None:
        problem = check_dependency(state, spec.dependency)
    if problem is None:
        problem = check_licenses(spec, config, state.meta.config_texts.get("resources"))
    if problem is None:
        problem = _check_submit_limits(state, req, len(parsed.task_ids) if parsed else 1)
    return problem, parsed


def check_reservation(state: ShardState, spec: JobSpec) -> tuple[Rejection, str] | None:
    """``--reservation=NAME``: the reservation must exist and admit the job's user or account
    (Slurm's words: ``Requested reservation is invalid``, ``Access denied to requested
    reservation``)."""
    reservation = state.meta.reservations.get(spec.reservation)
    if reservation is None:
        return R.RESERVATION_INVALID, f"--reservation={spec.reservation}"
    account = resolve(spec, state.config).account
    if not reservation.admits(spec.user, account):
        return R.RESERVATION_ACCESS, (f"reservation {spec.reservation} is not for user "
                                      f"{spec.user} (account {account})")
    return None


def check_dependency(state: ShardState, text: str,
                     job: Job | None = None) -> tuple[Rejection, str] | None:
    """``InvalidDependency`` when ``text`` names what no job can depend on (``job``: an
    updated job, which may not depend on itself)."""
    problem = dependency_problem(state, text, job) if text else ""
    return (R.INVALID_DEPENDENCY, problem) if problem else None


def _check_submit_limits(
    state: ShardState, req: SubmitJob | TestSubmitJob, tasks: int
) -> tuple[Rejection, str] | None:
    config, spec = state.config, req.spec
    assoc = assoc_table(config)
    if not config.scheduler.enforce_part_limits and not config.qos and assoc is None:
        return None
    resolved = resolve(spec, config)
    part = config.partition(spec.partition)
    if config.scheduler.enforce_part_limits and part is not None:
        if part.max_time_s and resolved.time_limit_s > part.max_time_s:
            return (
                R.PARTITION_TIME_LIMIT,
                f"{resolved.time_limit_s} s > MaxTime {part.max_time_s} s",
            )
        if part.max_nodes and resolved.demand.nodes_min > part.max_nodes:
            return (
                R.PARTITION_NODE_LIMIT,
                f"{resolved.demand.nodes_min} > MaxNodes {part.max_nodes}",
            )
    qos = config.qos_named(resolved.qos)
    if qos is not None and qos.max_submit_jobs_per_user:
        have = state.user_jobs(resolved.qos, spec.user)
        if have + tasks > qos.max_submit_jobs_per_user:
            return (
                R.QOS_MAX_SUBMIT,
                f"user {spec.user} has {have} jobs, MaxSubmitJobsPerUser "
                f"{qos.max_submit_jobs_per_user}",
            )
    if assoc is not None:  # Slurm checks the QOS first, then the association
        return submit_problem(
            assoc,
            (resolved.account, spec.user, resolved.qos),
            tasks,
            state.active_by_account_user,
            state.active_by_account,
        )
    return None
