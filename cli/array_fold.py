"""squeue's folding of a job array's pending tasks (pure).

slurmctld keeps an array's tasks that have not started as one job record until each is split
off to run, so squeue prints them on one line: ``BASE_[3-6]``, with the array's limit on
running tasks as ``BASE_[3-6%2]``; ``-r``/``--array`` prints one line per task. Sluice keeps a
row per task, so the CLI folds the same tasks: those of one array that are ``PENDING`` as
submitted (never started, never requeued) with the same reason. A single such task stays
``BASE_TASK``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["fold_pending_tasks", "task_ranges"]


def task_ranges(ids: Sequence[int]) -> str:
    """``1-3,5,7-9`` for ids 1, 2, 3, 5, 7, 8, 9 (sorted, duplicates ignored)."""
    runs: list[str] = []
    ordered = sorted(set(ids))
    start = prev = ordered[0] if ordered else 0
    for task in ordered[1:]:
        if task != prev + 1:
            runs.append(str(start) if start == prev else f"{start}-{prev}")
            start = task
        prev = task
    if ordered:
        runs.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(runs)


def _group(row: Mapping[str, Any]) -> tuple[str, str] | None:
    """The group a row folds into (its array and reason), None when it is shown alone."""
    if int(row.get("array_task_id", -1)) < 0 or row.get("state") != "PENDING":
        return None
    if row.get("start_ms") or row.get("restart_count") or row.get("flags"):
        return None
    return str(row.get("array_job_sluid", "")), str(row.get("reason", ""))


def fold_pending_tasks(rows: Sequence[Mapping[str, Any]],
                       values: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    """``values`` (one per row, as ``job_values`` makes them) with each array's pending
    tasks folded into the line of the first of them."""
    shown: list[dict[str, str]] = []
    groups: dict[tuple[str, str], tuple[int, list[int], int]] = {}
    for row, value in zip(rows, values, strict=True):
        key = _group(row)
        if key is None:
            shown.append(value)
        elif key in groups:
            groups[key][1].append(int(row["array_task_id"]))
        else:
            groups[key] = (len(shown), [int(row["array_task_id"])],
                           int(row.get("array_limit") or 0))
            shown.append(dict(value))
    for index, tasks, limit in groups.values():
        if len(tasks) > 1:
            line = shown[index]
            ids = task_ranges(tasks) + (f"%{limit}" if limit else "")
            line["job_id"] = f"{line['array_job_id']}_[{ids}]"
            line["array_task_id"] = ids
    return shown
