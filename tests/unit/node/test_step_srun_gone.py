"""A step whose srun cannot be reached is ended, not run unattended (agents.node.steps).

A step that waits for its job's resources (``StepPending``) starts whenever the steps holding
them end, minutes later perhaps; its srun may be gone by then (``kill -9``, a closed session:
nothing cancels the waiting step). The node ran it anyway, its output dropped: the command a
user had given up on ran unseen. slurmstepd fails a step whose srun it cannot connect to; so
does the node now (``SrunUnreachable``)."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

from agents.node.runs import RunTable, Scripts
from agents.node.step_io import StepServer
from agents.node.steps import StepTable
from tests.unit.node.test_runs import _launch


def _step(address: str, step: str) -> dict[str, Any]:
    return {"job_sluid": "sJOB", "job_id": 7, "run_sluid": "sRUN", "step_sluid": step,
            "step_id": 0, "nodes": ["n01"], "tasks_per_node": [1], "cpus_per_task": 1,
            "command": ["sleep", "60"], "workdir": "", "env": {}, "input": "",
            "io_address": address, "io_token": "tok"}


def _closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as gone:  # srun's listener, closed
        return int(gone.getsockname()[1])


def _node(tmp_path: Path) -> tuple[RunTable, StepTable, list[tuple[str, dict[str, Any]]]]:
    reports: list[tuple[str, dict[str, Any]]] = []

    def report(name: str, _command: dict[str, Any], fields: dict[str, Any]) -> None:
        reports.append((name, fields))

    runs = RunTable("n01", tmp_path, 1.0, report, Scripts(), allow_root=True)
    runs.launch(_launch(tmp_path, ["sleep", "60"], run="sRUN"))
    return runs, StepTable("n01", tmp_path, runs, report, 1.0), reports


def _ended(reports: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [fields for name, fields in reports if name == "ReportStepExit"]


def test_a_step_whose_srun_is_gone_is_killed_and_says_why(tmp_path: Path) -> None:
    runs, steps, reports = _node(tmp_path)
    try:
        steps.launch(_step(f"127.0.0.1:{_closed_port()}", "sGONE"))
        deadline = time.monotonic() + 15
        while not _ended(reports) and time.monotonic() < deadline:
            steps.poll()
            time.sleep(0.02)
        [end] = _ended(reports)
        assert "SrunUnreachable" in end["detail"], end
        assert end["signal"] or end["exit_code"], end
    finally:
        steps.terminate_all()
        runs.terminate_all()


def test_a_step_whose_srun_answers_runs_on(tmp_path: Path) -> None:
    runs, steps, reports = _node(tmp_path)
    server = StepServer("tok", "sHERE", "127.0.0.1")
    try:
        steps.launch(_step(f"127.0.0.1:{server.port}", "sHERE"))
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            steps.poll()
            time.sleep(0.02)
        assert _ended(reports) == [] and steps.running() == ["sHERE"]
    finally:
        steps.terminate_all()
        runs.terminate_all()
        server.close()
