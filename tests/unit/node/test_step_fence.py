"""A job step's tasks killed by the fence of a daemon cut off from the broker are reported
fenced (``ReportStepExit.fenced``), as the batch command's end is (``ReportJobExit.fenced``):
real supervised processes, a real srun-side socket, no Kafka (agents.node.steps,
agents.node.fence). Before, the step's end said only ``killed`` by signal 9 and the shard
recorded the step FAILED."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

from agents.node.runs import RunTable, Scripts
from agents.node.step_io import StepServer
from agents.node.steps import StepTable
from tests.unit.node.test_runs import _launch


def _step(server: StepServer, run: str, command: list[str]) -> dict[str, Any]:
    return {"job_sluid": "sJOB", "job_id": 7, "run_sluid": run, "step_sluid": server.step,
            "step_id": 0, "nodes": ["n01"], "tasks_per_node": [2], "cpus_per_task": 1,
            "command": command, "workdir": "", "env": {}, "input": "none",
            "io_address": f"127.0.0.1:{server.port}", "io_token": server.token}


def test_the_steps_of_a_fenced_run_are_reported_fenced_and_a_step_that_ended_is_not(
        tmp_path: Path) -> None:
    reports: list[tuple[str, str, dict[str, Any]]] = []

    def report(name: str, command: dict[str, Any], fields: dict[str, Any]) -> None:
        reports.append((str(fields.get("step_sluid") or command["run_sluid"]), name, fields))

    table = RunTable("n01", tmp_path, 1.0, report, Scripts(), allow_root=True, fence_s=30.0)
    steps = StepTable("n01", tmp_path, table, report, 1.0)
    began = time.monotonic()
    table.lease = lambda: began + 0.8 - time.monotonic()  # spent in 0.8 s, never renewed
    for run, after_ms in (("sEXP", 0), ("sNO", -1)):  # expedited; not requeued: never fenced
        table.launch({**_launch(tmp_path, ["sleep", "30"], run=run),
                      "restart_after_ms": after_ms, "output": f"{run}.out"})
    servers = {name: StepServer("tok", name, "127.0.0.1") for name in ("sLONG", "sDONE", "sNOS")}
    try:
        steps.launch(_step(servers["sLONG"], "sEXP", ["sleep", "30"]))
        steps.launch(_step(servers["sDONE"], "sEXP", ["true"]))
        steps.launch(_step(servers["sNOS"], "sNO", ["sleep", "30"]))
        while not any(s == "sDONE" for s, _n, _f in reports) and time.monotonic() - began < 10:
            steps.poll()
            time.sleep(0.02)
        fenced: list[str] = []
        while time.monotonic() - began < 4.0 and not any(s == "sLONG" for s, *_ in reports):
            now = time.monotonic()
            table.fence(now, lambda horizon: f"NodeFenced: {0.8 + horizon:g} s")
            fenced += steps.fence(lambda horizon: f"NodeFenced: {0.8 + horizon:g} s")
            steps.poll()
            table.poll()
            time.sleep(0.02)
        ends = {s: f for s, name, f in reports if name == "ReportStepExit"}
        assert fenced == ["sLONG"]
        assert ends["sLONG"]["fenced"] is True
        assert ends["sLONG"]["detail"] == "killed: NodeFenced: 0.8 s"
        # its supervisors killed the two tasks (as the batch command's: 128 + SIGKILL), or the
        # daemon's kill reached one first (the signal): either way SIGKILL, nothing else
        assert (ends["sLONG"]["exit_code"], ends["sLONG"]["signal"]) in (
            (128 + signal.SIGKILL, 0), (0, signal.SIGKILL), (128 + signal.SIGKILL, signal.SIGKILL))
        assert "fenced" not in ends["sDONE"] and ends["sDONE"]["exit_code"] == 0
        assert "sNOS" not in ends  # a run not requeued is never fenced: its step runs on
        assert steps.running() and table.phase("sNO") is not None
    finally:
        steps.terminate_all()
        table.terminate_all()
        for server in servers.values():
            server.close()
