"""Array tasks as Slurm names them: ``ARRAYID_TASK``, the array's id being its first task's
job id (what ``SLURM_ARRAY_JOB_ID`` says in the job)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["array_job_id", "array_task"]

Row = dict[str, Any]
Tasks = Callable[[str], list[Row]]
"""Array SLUID → the rows of its tasks (``Views.array_tasks``)."""


def array_job_id(tasks: Tasks, cache: dict[str, int], record: Row) -> int:
    """The job id of the array ``record``'s task (a JobQueued) belongs to: its first task's
    (0 for no array). ``cache`` remembers it per array SLUID (rebuilt from the rows)."""
    array = record.get("array_job_sluid", "")
    if not array:
        return 0
    if array not in cache:
        ids = [j["job_id"] for j in tasks(array)]
        cache[array] = min([*ids, record["job_id"]])
    return cache[array]


def array_task(by_id: Callable[[int], Row | None], tasks: Tasks, ref: str) -> Row | None:
    """The row of ``ARRAYID_TASK`` (None when no such task)."""
    array, _, task = ref.partition("_")
    if not (array.isdigit() and task.isdigit()):
        return None
    first = by_id(int(array))
    if first is None or first.get("array_job_id") != int(array):
        return None
    group = str(first.get("array_job_sluid", ""))
    return next((j for j in tasks(group) if j.get("array_task_id") == int(task)), None)
