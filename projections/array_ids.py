"""Array tasks as Slurm names them: ``ARRAYID_TASK``, the array's id being its first task's
job id (what ``SLURM_ARRAY_JOB_ID`` says in the job)."""

from __future__ import annotations

from typing import Any

__all__ = ["array_job_id", "array_task"]

Row = dict[str, Any]


def array_job_id(jobs: dict[str, Row], cache: dict[str, int], record: Row) -> int:
    """The job id of the array ``record``'s task (a JobQueued) belongs to: its first task's
    (0 for no array). ``cache`` remembers it per array SLUID (rebuilt from the rows)."""
    array = record.get("array_job_sluid", "")
    if not array:
        return 0
    if array not in cache:
        ids = [j["job_id"] for j in jobs.values() if j.get("array_job_sluid") == array]
        cache[array] = min([*ids, record["job_id"]])
    return cache[array]


def array_task(jobs: dict[str, Row], job_ids: dict[int, str], ref: str) -> Row | None:
    """The row of ``ARRAYID_TASK`` (None when no such task)."""
    array, _, task = ref.partition("_")
    if not (array.isdigit() and task.isdigit()):
        return None
    first = jobs.get(job_ids.get(int(array), ""))
    if first is None or first.get("array_job_id") != int(array):
        return None
    group = first.get("array_job_sluid")
    return next((j for j in jobs.values() if j.get("array_job_sluid") == group
                 and j.get("array_task_id") == int(task)), None)
