"""An update (or hold, release) of a whole array that the shard refuses says so and exits 1.
The shard answers for each task (a ``JobRejected`` about the task's SLUID); the CLI watched the
array's SLUID, where no refusal ever comes, so ``scontrol update JobId=ARRAY Partition=nope``
waited 10 s and exited 0 as if it had worked (found 2026-12-07). Now it watches the task the
id named (the array's first)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from cli import job_control
from cli.main import main

ARRAY, FIRST = "s00ARRAY000001", "s00TASK0000001"
ROW = {"job_id": 106, "job_sluid": FIRST, "array_job_sluid": ARRAY, "array_task_id": 1,
       "state": "PENDING", "time_limit_s": 0, "user": "alice"}


class _Client:
    sent: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, settings: Any) -> None:
        del settings

    def job(self, ref: str) -> dict[str, Any]:
        del ref
        return dict(ROW)

    def get(self, path: str) -> dict[str, Any]:
        if path.endswith(FIRST):
            return {"job": dict(ROW)}
        return {"error": "no job"}

    def denials(self, subject: str) -> list[dict[str, Any]]:
        if subject == FIRST and _Client.sent:  # the shard's answer: about each task
            return [{"event_sluid": "e1", "request": "UpdateJob", "reason": "InvalidPartition",
                     "detail": "Invalid partition name specified: partition nope does not exist"}]
        return []

    def send(self, key: str, name: str, record: dict[str, Any]) -> None:
        del key, name
        _Client.sent.append(record)

    def await_decision(self, subject: str, request: str, before: set[str],
                       changed: Any = None, timeout_s: float = 10.0) -> dict[str, Any] | None:
        del changed, timeout_s
        return next((d for d in self.denials(subject)
                     if d["event_sluid"] not in before and d["request"] == request), None)


def test_a_refused_array_update_is_said_and_exits_1(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(job_control, "Client", _Client)
    monkeypatch.setattr(job_control, "request_subject", lambda job, ref: ARRAY)
    _Client.sent = []
    assert main(["update", "JobId=106", "Partition=nope"]) == 1
    assert _Client.sent[0]["job_sluid"] == ARRAY  # every task is asked, as before
    assert "Invalid partition name specified" in capsys.readouterr().err


def test_a_throttle_is_sent_without_waiting_for_an_answer_no_task_may_give(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """ArrayTaskThrottle: the pending tasks take it, a running first task answers nothing, so
    waiting for its answer took the whole 10 s."""
    monkeypatch.setattr(job_control, "Client", _Client)
    monkeypatch.setattr(job_control, "request_subject", lambda job, ref: ARRAY)
    monkeypatch.setattr(_Client, "await_decision", None)  # never called
    _Client.sent = []
    assert main(["update", "JobId=106", "ArrayTaskThrottle=2"]) == 0
    assert _Client.sent == [{"job_sluid": ARRAY, "user": _Client.sent[0]["user"],
                             "changes": {"array": "%2"}}]
    monkeypatch.setattr(_Client, "job", lambda self, ref: {**ROW, "array_job_sluid": ""})
    assert main(["update", "JobId=106", "ArrayTaskThrottle=2"]) == 1
    assert "is no job array" in capsys.readouterr().err


def test_a_throttle_of_one_task_is_refused_as_slurm_refuses_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Slurm keeps one ArrayTaskThrottle for the whole array: ``JobId=106_1`` is refused
    (``Update of ArrayTaskThrottle is only allowed on ArrayJobId``), nothing sent."""
    monkeypatch.setattr(job_control, "Client", _Client)
    _Client.sent = []
    assert main(["update", "JobId=106_1", "ArrayTaskThrottle=2"]) == 1
    assert _Client.sent == []
    assert capsys.readouterr().err == (
        "Requested operation not supported on this job for job 106_1 (Update of "
        "ArrayTaskThrottle is only allowed on ArrayJobId)\n")


def test_scontrol_show_job_of_each_task_shows_the_arrays_throttle() -> None:
    from cli.show_cmd import job_lines

    first = job_lines({**ROW, "array_limit": 3, "array_job_id": 106}, 0, "106_1")[0]
    assert first.split() == ["JobId=106", "ArrayJobId=106", "ArrayTaskId=1",
                             "ArrayTaskThrottle=3", "JobName="]
    assert "ArrayTaskThrottle" not in job_lines(ROW, 0, "106_1")[0]
