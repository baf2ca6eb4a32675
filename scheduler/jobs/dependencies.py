"""Job dependencies (``-d``): ``afterok``, ``afterany``, ``afternotok``, ``after``, ``aftercorr``,
``singleton``, as Slurm's ``test_job_dependency`` evaluates them.

Syntax (:mod:`scheduler.jobs.dependency_syntax`): ``type:ref[:ref...]`` joined by ``,`` (all
must hold) or ``?`` (any may hold). A reference names a job, one array task (``ID_TASK``) or a
whole array (its id or SLUID): :mod:`scheduler.jobs.dependency_targets`.

Evaluation against the state gives one of three answers: satisfied, waiting (``Dependency``) or
never satisfiable (``DependencyNeverSatisfied``, e.g. ``afterok`` on a job that failed; the job
stays pending, as in Slurm without ``kill_invalid_depend``). On a whole array, as Slurm's
``test_job_array_*``: ``afterok`` holds once every task completed, ``afterany`` once every task
ended, ``afternotok`` once every task ended and one did not complete, ``after`` once no task is
pending (``after:ID+N``: and N minutes passed since the last task started, at the pass's time).
``aftercorr``: task N of this array waits for task N of the other as ``afterok`` (on a job that
is no array, or with no task N held, as ``afterok`` on what the reference names).
A named job that was purged (ended more than MinJobAge ago) counts as satisfied, as Slurm does
when the record is gone. A dependency once found never satisfiable stays so (Slurm marks it
``DEPEND_FAILED`` and never tests it again): the pass's ``JobPending(DependencyNeverSatisfied)``
fact latches the dependency's text in ``Job.dependency_failed``, so the purge of the job that
failed it does not make the job eligible, and a replay of the ledger latches it at the same
fact; only a new dependency (``update job Dependency=…``) is judged afresh. ``singleton``
waits while another job of the same user and name runs, or is pending with a lower job id
(Slurm's ``_find_singleton_job``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.jobs.cancelled import cancelled_without_run
from scheduler.jobs.dependency_syntax import Dependency, DependencyError, Ref, parse_dependency
from scheduler.jobs.dependency_targets import corresponding_task, named_jobs, unknown_reason
from scheduler.records import JobEnded
from scheduler.shard.reasons import JobState, PendingReason

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from scheduler.shard.model import Job
    from scheduler.shard.state import ShardState

__all__ = ["Dependency", "DependencyError", "NameKey", "circular_through", "dependency_problem",
           "dependency_reason", "first_pending_ids", "killed_by_dependency", "parse_dependency"]

SATISFIED, WAITING, NEVER = "", PendingReason.DEPENDENCY, PendingReason.DEPENDENCY_NEVER_SATISFIED

NameKey = tuple[str, str]
"""(user, job name): what ``singleton`` compares."""


def circular_through(state: ShardState, dep: Dependency, job: Job) -> str:
    """The reference of ``dep`` through which the dependencies lead back to ``job`` ("" when
    none): such a job would wait for ever (Slurm refuses it: ESLURM_CIRCULAR_DEPENDENCY; a
    whole array that ``job`` is a task of is such a reference, as ``_depends_on_same_job``)."""
    seen: set[str] = set()  # jobs already followed: they do not lead back
    for ref in dep.refs():
        stack = list(named_jobs(state, ref)[0])
        while stack:
            other = stack.pop()
            if other.job_sluid == job.job_sluid:
                return str(ref)
            if other.job_sluid in seen:
                continue
            seen.add(other.job_sluid)
            if other.has_ended or not other.spec.dependency:
                continue  # an ended job's dependency is behind it: no wait goes through it
            try:
                refs = parse_dependency(other.spec.dependency).refs()
            except DependencyError:
                continue
            for further in refs:
                stack += named_jobs(state, further)[0]
    return ""


def dependency_problem(state: ShardState, text: str, job: Job | None = None) -> str:
    """Why the dependency ``text`` is refused (``InvalidDependency``'s detail), "" when it is
    not: it does not parse, names a job or task that never existed, or (``job``: an update of
    that pending job) leads back to ``job``."""
    try:
        dep = parse_dependency(text)
    except DependencyError as error:
        return f"{text[:200]!r}: {error}"
    for ref in dep.refs():
        unknown = unknown_reason(state, ref)
        if unknown:
            return unknown
    through = circular_through(state, dep, job) if job is not None else ""
    if job is not None and through:
        return f"circular dependency: job {job.job_id} would wait for itself through job {through}"
    return ""


def first_pending_ids(state: ShardState) -> dict[NameKey, int]:
    """The lowest job id of a pending job (or a requeued one whose epilogs run) per (user,
    name): a ``singleton`` job with a higher id waits for it."""
    firsts: dict[NameKey, int] = {}
    jobs = state.jobs
    for sluid in (*state.pending, *state.completing):
        job = jobs[sluid]
        key = (job.spec.user, job.spec.name)
        if job.job_id < firsts.get(key, job.job_id + 1):
            firsts[key] = job.job_id
    return firsts


def _answer(jobs: tuple[Job, ...], kind: str, ref: Ref, now_ms: int) -> str:
    """One reference's answer, over the jobs it names (a whole array: every task held)."""
    if not jobs:
        return SATISFIED  # purged
    if kind == "after":
        if any(job.is_pending for job in jobs):
            return WAITING
        if ref.delay_min:  # counted from the last start (or the cancel of one never started)
            since = max(job.start_ms or job.end_ms for job in jobs)
            return SATISFIED if since + ref.delay_min * 60_000 <= now_ms else WAITING
        return SATISFIED
    if not all(job.has_ended for job in jobs):
        return WAITING
    if kind == "afterany":
        return SATISFIED
    completed = all(job.state == JobState.COMPLETED for job in jobs)
    if kind == "afternotok":
        return NEVER if completed else SATISFIED
    return SATISFIED if completed else NEVER  # afterok, aftercorr


def _item_answer(state: ShardState, job: Job, kind: str, refs: tuple[Ref, ...],
                 now_ms: int) -> str:
    answers = []
    for ref in refs:
        jobs, array = named_jobs(state, ref)
        if kind == "aftercorr":
            task = corresponding_task(state, array, job)
            jobs = (task,) if task is not None else jobs
        answers.append(_answer(jobs, kind, ref, now_ms))
    return NEVER if NEVER in answers else WAITING if WAITING in answers else SATISFIED


def dependency_reason(
    state: ShardState,
    job: Job,
    now_ms: int,
    running_names: set[NameKey],
    first_pending: Mapping[NameKey, int],
) -> str:
    """ "" when the job's dependency holds at ``now_ms``, else ``Dependency`` or
    ``DependencyNeverSatisfied``.

    ``running_names`` holds (user, name) of the running jobs and ``first_pending`` the lowest
    pending job id per (user, name) (:func:`first_pending_ids`), for ``singleton``.
    """
    if not job.spec.dependency:
        return SATISFIED
    if job.dependency_failed == job.spec.dependency:  # latched: never tested again
        return NEVER
    try:
        dep = parse_dependency(job.spec.dependency)
    except DependencyError:
        return NEVER
    answers = []
    for kind, refs in dep.items:
        if kind == "singleton":
            key = (job.spec.user, job.spec.name)
            waits = key in running_names or first_pending.get(key, job.job_id) < job.job_id
            answers.append(WAITING if waits else SATISFIED)
        else:
            answers.append(_item_answer(state, job, kind, refs, now_ms))
    if dep.any_of:
        if SATISFIED in answers:
            return SATISFIED
        return WAITING if WAITING in answers else NEVER
    return NEVER if NEVER in answers else WAITING if WAITING in answers else SATISFIED


def killed_by_dependency(meta: Mapping[str, Any], job: Job) -> JobEnded:
    """``--kill-on-invalid-dep=yes``: the job whose dependency can never be satisfied ends
    CANCELLED (reason ``DependencyNeverSatisfied``), as Slurm's ``kill_invalid_depend`` cancels
    it, where without the flag it waits with that reason for ever (the pass's reason facts:
    ``scheduler/schedule.py``; ``meta``: the fact's stamp)."""
    return cancelled_without_run(meta, job, PendingReason.DEPENDENCY_NEVER_SATISFIED)
