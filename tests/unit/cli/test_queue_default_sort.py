"""squeue without ``-S`` sorts as Slurm's ``sort_job_list`` does by default, ``P,t,-p``: by
partition, then state as printed (``PD`` before ``R``: the pending jobs first), then priority,
highest first. Before, jobs came in the views' order (job id), running jobs above the pending
ones a user looks for (found 2026-12-07)."""

from __future__ import annotations

from typing import Any

import pytest

from cli import queue_cmd
from cli.main import main

NOW = 1_796_000_000_000


def _job(job_id: int, state: str, priority: int, partition: str = "main") -> dict[str, Any]:
    running = state == "RUNNING"
    return {"job_id": job_id, "job_sluid": f"s{job_id}", "name": "x", "user": "root",
            "state": state, "priority": priority, "partition": partition,
            "start_ms": NOW if running else 0, "submit_ms": NOW,
            "nodes": ["node01"] if running else [], "reason": "" if running else "Priority"}


JOBS = [_job(1, "RUNNING", 5), _job(2, "PENDING", 10), _job(3, "PENDING", 30),
        _job(4, "RUNNING", 1, "gpu"), _job(5, "PENDING", 20), _job(6, "PENDING", 1, "gpu")]


class _Client:
    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        del path
        return {"jobs": [dict(j) for j in JOBS]}


@pytest.fixture(autouse=True)
def _views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_cmd, "Client", _Client)


def _order(*argv: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["queue", "-h", "-o", "%i", *argv]) == 0
    return capsys.readouterr().out.split()


def test_the_default_order_is_partition_state_then_priority(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert _order(capsys=capsys) == ["6", "4", "3", "5", "2", "1"]


def test_sort_keys_given_replace_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert _order("-S", "i", capsys=capsys) == ["1", "2", "3", "4", "5", "6"]
