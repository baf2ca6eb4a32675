"""squeue ``%E`` and ``scontrol show job``'s ``Dependency`` as Slurm prints them: an unmet
item marked ``(unfulfilled)``, one that can never be met ``(failed)``, and ``(null)`` once the
job has started (Slurm clears a satisfied dependency). Sluice printed the text as submitted,
``afterany:38`` for a job running since."""

from __future__ import annotations

from cli.dependency_shown import shown_dependency
from cli.show_cmd import job_lines


def _row(**fields: object) -> dict[str, object]:
    return {"job_id": 39, "state": "PENDING", "reason": "Dependency", "start_ms": 0,
            "dependency": "afterok:38", **fields}


def test_a_pending_jobs_one_item_is_marked_by_its_reason() -> None:
    assert shown_dependency(_row()) == "afterok:38(unfulfilled)"
    assert shown_dependency(_row(reason="DependencyNeverSatisfied")) == "afterok:38(failed)"
    assert shown_dependency(_row(dependency="singleton")) == "singleton(unfulfilled)"


def test_a_started_job_has_none_and_several_items_stay_as_submitted() -> None:
    assert shown_dependency(_row(state="RUNNING", reason="None", start_ms=5)) == "(null)"
    assert shown_dependency(_row(dependency="afterok:38:40")) == "afterok:38:40"
    assert shown_dependency(_row(reason="JobHeldUser")) == "afterok:38"
    assert shown_dependency(_row(dependency="")) == "(null)"


def test_scontrol_show_job_prints_it() -> None:
    lines = job_lines({**_row(), "user": "alice", "submit_ms": 0}, 0, "39")
    assert "Dependency=afterok:38(unfulfilled)" in " ".join(lines)
