"""Array tasks as Slurm names them: ``ARRAYID_TASK``, the array's id being its first task's
job id (what ``SLURM_ARRAY_JOB_ID`` says in the job)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schemas.digits import ascii_whole

__all__ = ["array_job_id", "array_task", "job_number"]

Row = dict[str, Any]
Tasks = Callable[[str], list[Row]]
"""Array SLUID → the rows of its tasks (``Views.array_tasks``)."""


JOB_ID_DIGITS = 19
"""The most digits of a job or task id a reader may name (an Avro ``long`` has 19)."""


def job_number(text: str) -> int | None:
    """The job (or task) id ``text`` names in ASCII digits, or None (:mod:`schemas.digits`)."""
    return ascii_whole(text, JOB_ID_DIGITS)


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
    array_text, _, task_text = ref.partition("_")
    array, task = job_number(array_text), job_number(task_text)
    if array is None or task is None:
        return None
    first = by_id(array)
    if first is None or first.get("array_job_id") != array:
        return None
    group = str(first.get("array_job_sluid", ""))
    return next((j for j in tasks(group) if j.get("array_task_id") == task), None)
