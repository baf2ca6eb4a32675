"""squeue folds an array's pending tasks into one line (cli/array_fold.py, cli/queue_cmd.py)."""

from __future__ import annotations

from typing import Any

from cli.array_fold import fold_pending_tasks, task_ranges
from cli.client import request_subject
from cli.job_fields import job_names, job_values
from projections.views import _array_limit


def _task(task: int, state: str = "PENDING", reason: str = "Priority", **more: Any
          ) -> dict[str, Any]:
    return {"job_id": 30 + task, "array_job_id": 31, "array_job_sluid": "sARRAY",
            "array_task_id": task, "state": state, "reason": reason, "start_ms": 0,
            "restart_count": 0, "flags": [], "array_limit": 2, **more}


def _shown(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    values = [job_values(r, 0, {"sARRAY": 31}) for r in rows]
    return [(v["job_id"], v["array_task_id"]) for v in fold_pending_tasks(rows, values)]


def test_task_ranges_are_slurms() -> None:
    assert task_ranges([9, 1, 2, 3, 5, 7, 8, 3]) == "1-3,5,7-9"
    assert task_ranges([4]) == "4" and task_ranges([]) == ""


def test_pending_tasks_fold_into_one_line_with_the_limit_running_ones_stay_alone() -> None:
    rows = [_task(1, "RUNNING", start_ms=5), _task(2, "RUNNING", start_ms=5), _task(3),
            _task(4), _task(6), {"job_id": 7, "state": "PENDING", "reason": "Priority",
                                 "start_ms": 0, "array_task_id": -1}]
    assert _shown(rows) == [("31_1", "1"), ("31_2", "2"), ("31_[3-4,6%2]", "3-4,6%2"),
                            ("7", "N/A")]


def test_a_requeued_task_another_reason_or_a_lone_task_is_not_folded() -> None:
    rows = [_task(3), _task(4, restart_count=1), _task(5, reason="Dependency"), _task(6)]
    assert _shown(rows) == [("31_[3,6%2]", "3,6%2"), ("31_4", "4"), ("31_5", "5")]
    assert _shown([_task(8)]) == [("31_8", "8")]


def test_dash_j_names_a_job_an_array_or_one_task() -> None:
    names = job_names(_task(3), {})  # the row's array_job_id, without asking the views
    assert {"31", "31_3", "33"} <= names and not {"31_4", "3"} & names
    assert job_names({"job_id": 7, "job_sluid": "sJ", "array_task_id": -1}, {}) == {"7", "sJ"}


def test_the_arrays_limit_is_read_from_its_spec() -> None:
    assert _array_limit("1-9%2") == 2 and _array_limit("1-9") == 0 and _array_limit("1%x") == 0


def test_a_request_about_an_arrays_id_is_about_every_task_a_task_id_about_that_task() -> None:
    row = {**_task(1), "job_sluid": "sTASK1"}
    assert request_subject(row, "31") == "sARRAY" and request_subject(row, "sARRAY") == "sARRAY"
    assert request_subject(row, "31_1") == "sTASK1" and request_subject(row, "sTASK1") == "sTASK1"
    assert request_subject({"job_sluid": "sJOB", "job_id": 7, "array_task_id": -1}, "7") == "sJOB"


def test_squeue_sorts_by_format_letters_descending_with_a_dash() -> None:
    from cli.queue_cmd import _sort_keys, _sorted

    rows = [{"job_id": i, "nice": n} for i, n in ((12, 0), (9, 10), (30, 0))]
    values = [{"job_id_raw": str(r["job_id"]), "job_id": str(r["job_id"]),
               "nice": str(r["nice"])} for r in rows]
    order = _sort_keys("-y,i")
    assert order == [("y", True), ("i", False)]
    _, shown = _sorted(rows, values, order)
    assert [v["job_id"] for v in shown] == ["9", "12", "30"]
    _, shown = _sorted(rows, values, _sort_keys("-i"))
    assert [v["job_id"] for v in shown] == ["30", "12", "9"]  # 30 > 12 > 9 as numbers


def test_a_sort_key_that_begins_with_a_dash_reaches_squeue_as_its_value() -> None:
    from cli.main import _dash_values

    assert _dash_values(["queue", "-S", "-p,i", "-h"]) == ["queue", "--sort=-p,i", "-h"]
    assert _dash_values(["queue", "-S", "i"]) == ["queue", "-S", "i"]
    assert _dash_values(["history", "-S", "-1d"]) == ["history", "-S", "-1d"]
