"""scancel's filters (``--me``, ``-u``, ``-t``, ``-n``…) signal each array task they match, by
its ``ARRAYID_TASK``, as Slurm's scancel does. They sent each matching row's bare job id, and an
array's first task's id is the array's: ``scancel --me`` with a pending array 79 (tasks 79, 80,
81) cancelled the whole array by ``79`` and then printed ``Kill job error on job id 80: Job/step
already completing or completed`` for each other task and exited 1 (seen live, 2026-12-08);
``scancel -t PD`` with the first task pending and another running cancelled the running one."""

from __future__ import annotations

from typing import Any

import pytest

from cli import job_control
from cli.client import ApiError
from cli.main import main


def _task(job_id: int, task: int, state: str) -> dict[str, Any]:
    return {"job_id": job_id, "job_sluid": f"s{job_id}", "user": "alice", "state": state,
            "name": "arr", "nodes": ["node01"] if state == "RUNNING" else [],
            "array_job_sluid": "a79", "array_job_id": 79, "array_task_id": task}


JOBS = [_task(79, 1, "PENDING"), _task(80, 2, "RUNNING"), _task(81, 3, "PENDING"),
        {"job_id": 90, "job_sluid": "s90", "user": "alice", "state": "PENDING", "name": "one",
         "nodes": [], "array_task_id": -1}]


class _Client:
    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        del path
        return {"jobs": JOBS}

    def job(self, ref: str) -> dict[str, Any]:
        for job in JOBS:
            task = f"{job.get('array_job_id')}_{job['array_task_id']}"
            if ref in (str(job["job_id"]), task):
                return job
        raise ApiError(f"no job {ref}")


@pytest.fixture
def cancelled(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(job_control, "Client", _Client)
    monkeypatch.setattr(job_control, "decided", lambda client, verb, ref, sluid, kind, record,
                        *_: sent.append((ref, sluid)) or True)
    return sent


def test_a_user_filter_cancels_each_task_alone(cancelled: list[tuple[str, str]],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cancel", "-u", "alice"]) == 0
    assert cancelled == [("79_1", "s79"), ("79_2", "s80"), ("79_3", "s81"), ("90", "s90")]
    assert capsys.readouterr().err == ""


def test_a_state_filter_leaves_the_running_task_alone(
        cancelled: list[tuple[str, str]]) -> None:
    assert main(["cancel", "-t", "PD"]) == 0
    assert cancelled == [("79_1", "s79"), ("79_3", "s81"), ("90", "s90")]


def test_an_array_id_with_a_filter_names_the_tasks_that_match(
        cancelled: list[tuple[str, str]]) -> None:
    assert main(["cancel", "-t", "RUNNING", "79"]) == 0
    assert cancelled == [("79_2", "s80")]
    cancelled.clear()
    assert main(["cancel", "-t", "PD", "79_3", "79_2", "90"]) == 0
    assert cancelled == [("79_3", "s81"), ("90", "s90")]
