"""``scontrol requeue`` (``sluice requeue``) of an ended job says the shard's refusal and exits
1 before sending anything: the shard refuses one it still holds (JobNotRunning), but one it
purged after MinJobAge it leaves unanswered, and the command said nothing, exit 0 (seen live:
``scontrol requeue 51`` of a COMPLETED job) (found 2026-12-07)."""

from __future__ import annotations

from typing import Any

import pytest

from cli import admin
from cli.main import main


def test_requeue_of_an_ended_job_is_refused_before_it_is_sent(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    sent: list[str] = []

    class Views:
        def __init__(self, settings: Any) -> None:
            del settings

        def job(self, ref: str) -> dict[str, Any]:
            state = "COMPLETED" if ref == "1" else "RUNNING"
            return {"job_sluid": f"s{ref}", "job_id": int(ref), "state": state}

    monkeypatch.setattr(admin, "Client", Views)
    monkeypatch.setattr(admin, "decided", lambda client, verb, ref, *rest, **watch:
                        sent.append(ref) or True)
    assert main(["requeue", "1", "2"]) == 1
    assert sent == ["2"]
    assert ("Job/step already completing or completed for job 1 (JobNotRunning: job is "
            "COMPLETED)") in capsys.readouterr().err


def test_requeue_of_an_array_whose_tasks_all_ended_is_refused_before_it_is_sent(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``scontrol requeue 7`` of array 7 whose tasks all ended (the shard purged them, so it
    answers nothing) said nothing and exited 0; array 9 with a task still running is sent."""
    sent: list[str] = []
    tasks = {"a7": [("COMPLETED", 0), ("FAILED", 1)], "a9": [("COMPLETED", 0), ("RUNNING", 1)]}

    class Views:
        def __init__(self, settings: Any) -> None:
            del settings

        def job(self, ref: str) -> dict[str, Any]:
            return {"job_sluid": f"s{ref}", "job_id": int(ref), "state": "COMPLETED",
                    "array_job_sluid": f"a{ref}", "array_job_id": int(ref), "array_task_id": 0}

        def get(self, path: str) -> dict[str, Any]:
            array = path.rpartition("array=")[2]
            return {"jobs": [{"job_sluid": f"{array}-{task}", "state": state,
                              "array_job_sluid": array, "array_task_id": task}
                             for state, task in tasks[array]]}

    monkeypatch.setattr(admin, "Client", Views)
    monkeypatch.setattr(admin, "decided", lambda client, verb, ref, *rest, **watch:
                        sent.append(ref) or True)
    assert main(["requeue", "7", "9"]) == 1
    assert sent == ["9"]
    assert ("Job/step already completing or completed for job 7 (JobNotRunning: job is "
            "COMPLETED)") in capsys.readouterr().err
