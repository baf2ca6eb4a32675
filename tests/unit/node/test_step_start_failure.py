"""A step's task whose command cannot be executed ends with a shell's code, not as killed.

``srun no-such-program``: the task's supervisor (forked by the daemon's supervisor server, as
every task's is) says why it could not start, and its exit code, 127 (not found) or 126 (found,
not executable), as a batch job's launch failure and a shell give. Before, a forked supervisor
that never started its command said no ``exit`` line, so the task was read as killed by SIGKILL
and srun printed ``Killed by signal 9`` and exited 137, as if the node had run out of memory.
Real processes throughout: the run table, the supervisor server, srun's side of the step's I/O.
"""

from __future__ import annotations

import os
import pwd
import queue
import time
from pathlib import Path
from typing import Any

import pytest

from agents.node.runs import RunTable, Scripts
from agents.node.step_io import StepServer
from agents.node.steps import StepTable
from agents.node.supervisor_server import SupervisorServer

ME = pwd.getpwuid(os.getuid()).pw_name


def _launch(workdir: Path) -> dict[str, Any]:
    return {
        "job_sluid": "sJOBsRUN", "job_id": 7, "run_sluid": "sRUN", "node_sluid": "sNODE",
        "node_name": "n01", "batch_host": True, "nodes": ["n01"], "segments": [],
        "restart_count": 0, "previous_run_sluid": "", "user": ME, "partition": "main",
        "name": "t", "command": ["sh", "-c", 'while [ ! -e "$D/stop" ]; do sleep 0.05; done'],
        "workdir": str(workdir), "env": {"D": str(workdir)}, "output": "/dev/null",
        "error": "", "time_limit_s": 0, "issued_ms": 0,
    }


@pytest.mark.parametrize(("command", "code"), [
    (["no-such-command-sluice"], 127),
    (["/etc/passwd"], 126),
])
def test_a_task_that_cannot_exec_reports_127_or_126_to_srun_and_the_shard(
        tmp_path: Path, command: list[str], code: int) -> None:
    reports: list[tuple[str, dict[str, Any]]] = []

    def report(name: str, _command: dict[str, Any], fields: dict[str, Any]) -> None:
        reports.append((name, fields))

    server = SupervisorServer(tmp_path)
    table = RunTable("n01", tmp_path, 1.0, report, Scripts(start_timeout_s=10.0),
                     allow_root=True, server=server)
    steps = StepTable("n01", tmp_path, table, report, 1.0)
    srun = StepServer("tok", "sSTEP", "127.0.0.1")
    try:
        table.launch(_launch(tmp_path))
        steps.launch({"job_sluid": "sJOBsRUN", "job_id": 7, "run_sluid": "sRUN",
                      "step_sluid": "sSTEP", "step_id": 0, "nodes": ["n01"],
                      "tasks_per_node": [1], "cpus_per_task": 1, "command": command,
                      "workdir": str(tmp_path), "env": {}, "input": "",
                      "io_address": f"127.0.0.1:{srun.port}", "io_token": "tok"})
        deadline = time.monotonic() + 20
        while not any(name == "ReportStepExit" for name, _ in reports):
            assert time.monotonic() < deadline, reports
            table.poll()
            steps.poll()
            time.sleep(0.02)

        fields = next(f for name, f in reports if name == "ReportStepExit")
        assert (fields["exit_code"], fields["signal"]) == (code, 0), fields
        assert "task 0 could not start" in fields["detail"]
        exits = []
        while True:
            try:
                message = srun.messages.get(timeout=5)
            except queue.Empty:
                break
            if "exit" in message:
                exits.append(message["exit"])
                break
        assert exits == [code]  # what srun prints and exits with: Exited with exit code N
    finally:
        (tmp_path / "stop").write_text("")
        steps.terminate_all()
        table.terminate_all()
        srun.close()
        server.close()
