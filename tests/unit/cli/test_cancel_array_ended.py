"""``scancel ARRAYID`` of an array whose tasks have all ended says scancel's ``Job/step already
completing or completed`` and exits 1, as one ended job does (Slurm's job_str_signal answers
ESLURM_ALREADY_DONE when every task it signalled was done); it sent the request and, the shard
having purged the tasks, said nothing and exited 0 (found 2026-12-07)."""

from __future__ import annotations

from typing import Any

import pytest

from cli import job_control
from cli.main import main

TASKS = {"a7": [("COMPLETED", 0), ("CANCELLED", 1)], "a9": [("COMPLETED", 0), ("PENDING", 1)]}


class _Views:
    def __init__(self, settings: Any) -> None:
        del settings

    def job(self, ref: str) -> dict[str, Any]:
        return {"job_sluid": f"s{ref}", "job_id": int(ref), "state": "COMPLETED",
                "array_job_sluid": f"a{ref}", "array_job_id": int(ref), "array_task_id": 0}

    def get(self, path: str) -> dict[str, Any]:
        array = path.rpartition("array=")[2]
        return {"jobs": [{"job_sluid": f"{array}-{task}", "state": state,
                          "array_job_sluid": array, "array_task_id": task}
                         for state, task in TASKS[array]]}


def test_scancel_of_an_array_whose_tasks_all_ended_is_refused_before_it_is_sent(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    sent: list[str] = []
    monkeypatch.setattr(job_control, "Client", _Views)
    monkeypatch.setattr(job_control, "decided", lambda client, verb, ref, *rest, **watch:
                        sent.append(ref) or True)
    assert main(["cancel", "7", "9"]) == 1
    assert sent == ["9"]
    assert ("Kill job error on job id 7: Job/step already completing or completed"
            in capsys.readouterr().err)


def test_hold_or_release_of_an_array_whose_tasks_all_ended_is_refused_before_it_is_sent(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``scontrol hold 7`` / ``release 7`` of such an array: scontrol's ``Job has already
    finished``, exit 1 (it was sent, unanswered once the shard purged the tasks: exit 0)."""
    from cli import submit

    sent: list[str] = []
    monkeypatch.setattr(submit, "Client", _Views)
    monkeypatch.setattr(submit, "decided", lambda client, verb, ref, *rest, **watch:
                        sent.append(ref) or True)
    monkeypatch.setattr(submit, "admin_hold", lambda *args: False)
    assert main(["hold", "7", "9"]) == 1
    assert main(["release", "7"]) == 1
    assert sent == ["9"]
    assert "Job has already finished for job 7 (JobFinished: job is COMPLETED)" in (
        capsys.readouterr().err)
