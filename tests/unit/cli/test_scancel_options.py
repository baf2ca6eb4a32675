"""scancel's ``-Q/--quiet``, ``-w/--nodelist``, ``-R/--reservation``, ``-v`` and ``-H``.
Before, each was a usage error (exit 2): ``scancel -Q $ID`` in a script's cleanup trap did not
cancel anything (found 2026-12-07)."""

from __future__ import annotations

from typing import Any

import pytest

from cli import job_control
from cli.client import ApiError
from cli.main import main

JOBS = [{"job_id": 7, "job_sluid": "s7", "user": "alice", "state": "RUNNING",
         "nodes": ["node01", "node02"], "reservation": ""},
        {"job_id": 8, "job_sluid": "s8", "user": "alice", "state": "RUNNING",
         "nodes": ["node03"], "reservation": "maint"},
        {"job_id": 9, "job_sluid": "s9", "user": "alice", "state": "PENDING", "nodes": [],
         "reservation": ""}]


class _Client:
    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        del path
        return {"jobs": JOBS}

    def job(self, ref: str) -> dict[str, Any]:
        for job in JOBS:
            if str(job["job_id"]) == ref:
                return job
        raise ApiError(f"no job {ref}")


@pytest.fixture
def cancelled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    sent: list[str] = []
    monkeypatch.setattr(job_control, "Client", _Client)
    monkeypatch.setattr(job_control, "decided",
                        lambda client, verb, ref, sluid, kind, record, *_: sent.append(ref) or True)
    return sent


def test_nodelist_and_reservation_select_the_jobs(cancelled: list[str]) -> None:
    assert main(["cancel", "-w", "node[02-03]"]) == 0
    assert cancelled == ["7", "8"]
    cancelled.clear()
    assert main(["cancel", "-R", "maint", "-v", "-H"]) == 0
    assert cancelled == ["8"]


def test_quiet_says_nothing_and_keeps_the_status(cancelled: list[str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cancel", "99999"]) == 1
    assert "99999" in capsys.readouterr().err
    assert main(["cancel", "-Q", "99999", "9"]) == 1
    assert capsys.readouterr().err == "" and cancelled == ["9"]
