"""What a dependency's reference names in a shard: one job, one array task, or a whole array.

As Slurm's ``_find_dependent_job_ptr``: a number that is an array's id (its first task's job
id, what ``sbatch --parsable`` answers and ``SLURM_ARRAY_JOB_ID`` says) names every task of
the array, any other number the one job (or task) with that id; ``ID_TASK`` names one task.
An array's tasks have consecutive job ids in task order (:mod:`scheduler.jobs.arrays`), so the
array's id is known from any task still held, after its first task was purged too: the task's
id less its rank in the array. Only the tasks the shard still holds are named; when none is
left the reference names nothing (a purged job, which a dependency counts as satisfied).
"""

from __future__ import annotations

import bisect
import functools
from typing import TYPE_CHECKING

from scheduler.jobs.arrays import parse_array

if TYPE_CHECKING:
    from scheduler.jobs.dependency_syntax import Ref
    from scheduler.shard.model import Job
    from scheduler.shard.state import ShardState

__all__ = ["array_id", "array_of", "corresponding_task", "named_jobs", "unknown_reason"]

_ANY_SIZE = 1 << 31  # an admitted array was checked against MaxArraySize already


@functools.lru_cache(maxsize=1024)
def _task_ids(array_text: str) -> tuple[int, ...]:
    """The task ids of an admitted array spec, ascending."""
    parsed = parse_array(array_text, _ANY_SIZE)
    return parsed.task_ids if parsed is not None else ()


def _rank(task: Job) -> int:
    """The task's place in its array (0: the first task), -1 when the spec does not say."""
    ids = _task_ids(task.spec.array)
    at = bisect.bisect_left(ids, task.array_task_id)
    return at if at < len(ids) and ids[at] == task.array_task_id else -1


def array_id(state: ShardState, array_sluid: str) -> int:
    """The job id of the array ``array_sluid`` (its first task's), 0 when no task is held."""
    tasks = state.arrays.get(array_sluid)
    if not tasks:
        return 0
    first = state.jobs[tasks[0]]
    rank = _rank(first)
    return first.job_id - rank if rank >= 0 else 0


def array_of(state: ShardState, job_id: int) -> str:
    """The SLUID of the array whose id is ``job_id`` while any of its tasks is held, else ""."""
    sluid = state.job_by_id.get(job_id)
    if sluid is not None:
        job = state.jobs[sluid]
        if job.array_job_sluid and array_id(state, job.array_job_sluid) == job_id:
            return job.array_job_sluid
        return ""
    # its first task was purged: an array whose first held task has a higher id
    for array, tasks in state.arrays.items():
        if state.jobs[tasks[0]].job_id > job_id and array_id(state, array) == job_id:
            return array
    return ""


def _task(state: ShardState, array_sluid: str, task_id: int) -> Job | None:
    """Task ``task_id`` of the array, if the shard still holds it."""
    tasks = state.arrays.get(array_sluid)
    if not tasks:
        return None
    ids = _task_ids(state.jobs[tasks[0]].spec.array)
    at = bisect.bisect_left(ids, task_id)
    if at == len(ids) or ids[at] != task_id:
        return None
    sluid = state.job_by_id.get(array_id(state, array_sluid) + at)
    job = state.jobs.get(sluid) if sluid is not None else None
    return job if job is not None and job.array_job_sluid == array_sluid else None


def _live_tasks(state: ShardState, array_sluid: str) -> tuple[Job, ...]:
    return tuple(state.jobs[s] for s in state.arrays.get(array_sluid, ()))


def named_jobs(state: ShardState, ref: Ref) -> tuple[tuple[Job, ...], str]:
    """The jobs ``ref`` names that the shard still holds (none: gone) and, when it names a
    whole array, the array's SLUID ("" for one job or task)."""
    job_id = ref.job_id
    if job_id is None:  # a SLUID: a job's, or an array's as submitted
        job = state.jobs.get(ref.job)
        if job is not None:
            return (job,), ""
        if ref.job in state.arrays:
            return _live_tasks(state, ref.job), ref.job
        return (), ""
    array = array_of(state, job_id)
    if ref.task >= 0:
        task = _task(state, array, ref.task) if array else None
        return ((task,) if task is not None else ()), ""
    if array:
        return _live_tasks(state, array), array
    sluid = state.job_by_id.get(job_id)
    return ((state.jobs[sluid],) if sluid is not None else ()), ""


def corresponding_task(state: ShardState, array_sluid: str, job: Job) -> Job | None:
    """``aftercorr``: the task of ``array_sluid`` with the task id of ``job`` (an array task)."""
    if not array_sluid or not job.array_job_sluid:
        return None
    return _task(state, array_sluid, job.array_task_id)


def unknown_reason(state: ShardState, ref: Ref) -> str:
    """Why ``ref`` names no job that exists or existed ("" when it does): Slurm refuses a
    dependency on a job it does not know (``Job dependency problem``)."""
    jobs, _ = named_jobs(state, ref)
    if jobs:
        return ""
    job_id = ref.job_id
    if job_id is None:
        return "" if ref.job in state.meta.known else f"job {ref.job[:40]} does not exist"
    if not 0 < job_id < state.meta.next_job_id:
        return f"job {ref.job[:40]} does not exist"
    if ref.task < 0:
        return ""  # purged
    array = array_of(state, job_id)
    if array:
        ids = _task_ids(state.jobs[state.arrays[array][0]].spec.array)
        at = bisect.bisect_left(ids, ref.task)
        return "" if at < len(ids) and ids[at] == ref.task else (
            f"array {job_id} has no task {ref.task}")
    sluid = state.job_by_id.get(job_id)
    if sluid is not None:  # a job the shard holds that is no array's id
        return f"job {job_id} is not an array job: {job_id}_{ref.task} names no task"
    return ""  # the array (or job) was purged
