"""A job whose working directory is on a hung mount holds only its own start, never the node.

The mount is a real one: a FUSE file system (``mount(2)`` of type ``fuse`` on ``/dev/fuse``)
whose server never answers, as an NFS server that went away or a FUSE daemon that hangs. Every
access to it blocks in the kernel until the connection is aborted (its descriptor closed:
then ``ENOTCONN``). Needs root and ``/dev/fuse``.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.node.runs import START_TIMED_OUT, RunTable, Scripts
from agents.node.step_io import StepServer
from agents.node.steps import StepTable
from agents.node.supervisor_server import SupervisorServer
from tests.unit.node.procs import hung_directory

Report = tuple[str, str, dict[str, Any]]
ME = pwd.getpwuid(os.getuid()).pw_name
START_TIMEOUT_S = 3.0


@pytest.fixture
def hung_mount(tmp_path: Path) -> Iterator[Path]:
    """A directory on a FUSE mount whose server never answers."""
    with hung_directory(tmp_path) as point:
        yield point


def _launch(run: str, workdir: Path, command: list[str]) -> dict[str, Any]:
    return {
        "job_sluid": f"sJOB{run}", "job_id": 7, "run_sluid": run, "node_sluid": "sNODE",
        "node_name": "n01", "batch_host": True, "nodes": ["n01"], "segments": [],
        "restart_count": 0, "previous_run_sluid": "", "user": ME, "partition": "main",
        "name": "t", "command": command, "workdir": str(workdir), "env": {},
        "output": "/dev/null", "error": "", "time_limit_s": 0, "issued_ms": 0,
    }


def _until(table: RunTable, done: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        table.poll()
        time.sleep(0.02)
    assert done()


@pytest.mark.parametrize("forked", [False, True], ids=["own-supervisor", "supervisor-server"])
def test_a_hung_working_directory_fails_its_run_after_the_bound_and_blocks_no_other_run(
        tmp_path: Path, hung_mount: Path, forked: bool) -> None:
    reports: list[Report] = []

    def report(name: str, launch: dict[str, Any], fields: dict[str, Any]) -> None:
        reports.append((launch["run_sluid"], name, fields))

    server = SupervisorServer(tmp_path) if forked else None
    table = RunTable("n01", tmp_path, 1.0, report, Scripts(start_timeout_s=START_TIMEOUT_S),
                     allow_root=True, server=server)
    try:
        began = time.monotonic()
        table.launch(_launch("sHUNG", hung_mount, ["true"]))
        assert time.monotonic() - began < 2.0  # the launch returned: nothing waits on the mount

        table.launch(_launch("sFINE", tmp_path, ["sh", "-c", "exit 4"]))
        _until(table, lambda: any(r[0] == "sFINE" for r in reports), 10)
        fine = [r for r in reports if r[0] == "sFINE"]
        assert fine[0][1:] == ("ReportJobExit", {"exit_code": 4, "signal": 0, "detail": "",
                                                 "epilog_done": True})
        assert time.monotonic() - began < START_TIMEOUT_S  # while the other one still hangs
        assert not [r for r in reports if r[0] == "sHUNG"]

        _until(table, lambda: any(r[0] == "sHUNG" for r in reports), START_TIMEOUT_S + 10)
        assert time.monotonic() - began >= START_TIMEOUT_S
        (_, name, fields) = next(r for r in reports if r[0] == "sHUNG")
        assert name == "ReportJobExit"
        assert fields["exit_code"] == 126 and fields["signal"] == 0
        assert fields["detail"].startswith(f"launch failed as {ME}: {START_TIMED_OUT}: ")

        # the run is killed like any other (its blocked child dies), then its epilog is run
        # and the node holds nothing of it once the scheduler's TERMINATE came
        _until(table, lambda: any(r[1] == "ReportEpilog" for r in reports), 10)
        assert [r[1] for r in reports if r[0] == "sHUNG"] == ["ReportJobExit", "ReportEpilog"]
        table.kill("sHUNG", "TERMINATE")
        table.poll()
        assert table.phase("sHUNG") is None
        assert [r[1] for r in reports if r[0] == "sHUNG"] == ["ReportJobExit", "ReportEpilog"]
    finally:
        table.terminate_all()
        if server is not None:
            server.close()


def test_an_output_file_on_a_hung_mount_fails_the_run_the_same_way(
        tmp_path: Path, hung_mount: Path) -> None:
    reports: list[Report] = []
    table = RunTable("n01", tmp_path, 1.0,
                     lambda name, launch, fields: reports.append((launch["run_sluid"], name,
                                                                  fields)),
                     Scripts(start_timeout_s=START_TIMEOUT_S), allow_root=True)
    try:
        launch = {**_launch("sOUT", tmp_path, ["true"]), "output": str(hung_mount / "out")}
        began = time.monotonic()
        table.launch(launch)
        assert time.monotonic() - began < 2.0
        _until(table, lambda: bool(reports), START_TIMEOUT_S + 10)
        assert reports[0][2]["detail"].startswith(f"launch failed as {ME}: {START_TIMED_OUT}")
    finally:
        table.terminate_all()


def _step(server: StepServer, workdir: Path, command: list[str], tasks: int) -> dict[str, Any]:
    return {"job_sluid": "sJOBsRUN", "job_id": 7, "run_sluid": "sRUN",
            "step_sluid": server.step, "step_id": 0, "nodes": ["n01"],
            "tasks_per_node": [tasks], "cpus_per_task": 1, "command": command,
            "workdir": str(workdir), "env": {}, "input": "",
            "io_address": f"127.0.0.1:{server.port}", "io_token": server.token}


def test_a_step_whose_working_directory_hangs_fails_after_the_bound_and_holds_no_other_step(
        tmp_path: Path, hung_mount: Path) -> None:
    reports: list[Report] = []

    def report(name: str, command: dict[str, Any], fields: dict[str, Any]) -> None:
        reports.append((str(fields.get("step_sluid") or command["run_sluid"]), name, fields))

    table = RunTable("n01", tmp_path, 1.0, report, Scripts(start_timeout_s=START_TIMEOUT_S),
                     allow_root=True)
    launch = _launch("sRUN", tmp_path, ["sh", "-c", 'while [ ! -e "$D/stop" ]; do sleep 0.05; '
                                                    "done"])
    launch["env"] = {"D": str(tmp_path)}
    table.launch(launch)
    steps = StepTable("n01", tmp_path, table, report, 1.0)
    hung_srun = StepServer("tok1", "sSTEP1", "127.0.0.1")
    fine_srun = StepServer("tok2", "sSTEP2", "127.0.0.1")
    try:
        began = time.monotonic()
        steps.launch(_step(hung_srun, hung_mount, ["true"], 2))
        assert time.monotonic() - began < 2.0
        steps.launch(_step(fine_srun, tmp_path, ["sh", "-c", "exit 3"], 1))

        def step_report(step: str) -> bool:
            table.poll()
            steps.poll()
            return any(r[0] == step and r[1] == "ReportStepExit" for r in reports)

        _until(table, lambda: step_report("sSTEP2"), 10)
        assert time.monotonic() - began < START_TIMEOUT_S
        assert next(r[2] for r in reports if r[0] == "sSTEP2")["exit_code"] == 3
        assert not step_report("sSTEP1")

        _until(table, lambda: step_report("sSTEP1"), START_TIMEOUT_S + 15)
        assert time.monotonic() - began >= START_TIMEOUT_S
        fields = next(r[2] for r in reports if r[0] == "sSTEP1")
        assert fields["exit_code"] == 1 and fields["signal"] == 0
        assert START_TIMED_OUT in fields["detail"], fields
        assert not steps.running()
    finally:
        (tmp_path / "stop").write_text("")
        steps.terminate_all()
        table.terminate_all()
        hung_srun.close()
        fine_srun.close()
