"""Supervisors forked by the daemon's supervisor server (``agents.node.supervisor_server``), on
real processes: the same results as a supervisor started alone, the run dies with its lifeline,
and a server that died is started again."""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.node.proctrack import RunScope
from agents.node.runs import RunTable
from agents.node.supervised import Supervised
from agents.node.supervisor_server import SupervisorServer
from tests.unit.node.procs import token, wait_count, wait_gone

ME = pwd.getpwuid(os.getuid()).pw_name
ENV = {"PATH": "/usr/bin:/bin"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SupervisorServer]:
    found = SupervisorServer(tmp_path)
    yield found
    found.close()


def _start(server: SupervisorServer, tmp_path: Path, argv: list[str], run: str = "sSRV",
           stdout: Any = subprocess.DEVNULL) -> Supervised:
    return Supervised.start(RunScope(run), argv, {**ENV, "SLUICE_RUN_SLUID": run}, tmp_path,
                            stdout, subprocess.DEVNULL, tmp_path, server=server)


def _server_pid(server: SupervisorServer) -> int:
    assert server._process is not None
    return server._process.pid


def test_a_forked_supervisor_is_the_server_s_child_and_reports_the_command_s_exit(
    server: SupervisorServer, tmp_path: Path,
) -> None:
    t = token()
    process = _start(server, tmp_path, ["sh", "-c", f"sleep {t}; exit 3"])
    parent = int(Path(f"/proc/{process.pid}/stat").read_text().rpartition(")")[2].split()[1])

    assert parent == _server_pid(server)  # forked, not an interpreter of the daemon's
    for pid in wait_count(t, 1):
        os.kill(pid, signal.SIGKILL)  # the sleep ends; the command goes on to exit 3
    assert process.wait(30) == 3
    assert process.clean
    assert process.fileno() is None  # collected: its pidfd is closed


def test_a_command_killed_by_a_signal_is_reported_as_that_signal(
    server: SupervisorServer, tmp_path: Path,
) -> None:
    process = _start(server, tmp_path, ["sh", "-c", "kill -TERM $$"])
    assert process.wait(30) == -signal.SIGTERM


def test_the_command_s_output_goes_where_the_daemon_said(
    server: SupervisorServer, tmp_path: Path,
) -> None:
    out_r, out_w = os.pipe()
    try:
        process = _start(server, tmp_path, ["sh", "-c", "echo forked"], stdout=out_w)
    finally:
        os.close(out_w)
    with os.fdopen(out_r, "rb") as out:
        assert out.read() == b"forked\n"
    assert process.wait(30) == 0


def test_a_command_that_cannot_start_raises_through_the_server(
    server: SupervisorServer, tmp_path: Path,
) -> None:
    with pytest.raises(FileNotFoundError):
        _start(server, tmp_path, [str(tmp_path / "no-such-command")])


def test_a_kill_reaches_the_run_of_a_forked_supervisor(
    server: SupervisorServer, tmp_path: Path,
) -> None:
    t = token()
    process = _start(server, tmp_path, ["sh", "-c", f"sleep {t} & sleep {t}; wait"])
    wait_count(t, 2)

    process.signal(signal.SIGTERM)

    assert process.wait(30) == -signal.SIGTERM
    assert wait_gone(t, 5) == []


def test_when_the_daemon_s_end_of_the_lifeline_closes_the_run_dies(
    server: SupervisorServer, tmp_path: Path,
) -> None:
    t = token()
    process = _start(server, tmp_path, ["sleep", t])
    wait_count(t, 1)

    process._lifeline.close()  # what the kernel does when the daemon dies

    assert wait_gone(t, 10) == []


def test_a_server_that_died_is_started_again_at_the_next_run(
    server: SupervisorServer, tmp_path: Path,
) -> None:
    assert _start(server, tmp_path, ["true"]).wait(30) == 0
    first = _server_pid(server)
    os.kill(first, signal.SIGKILL)
    os.waitpid(first, 0)

    assert _start(server, tmp_path, ["true"], run="sSRV2").wait(30) == 0
    assert _server_pid(server) != first


def test_a_run_table_with_a_server_runs_the_job_as_its_owner_and_reports_the_exit(
    server: SupervisorServer, tmp_path: Path,
) -> None:
    reports: list[tuple[str, dict[str, Any]]] = []

    def report(name: str, _launch: dict[str, Any], fields: dict[str, Any]) -> None:
        reports.append((name, fields))

    table = RunTable("n01", tmp_path, 1.0, report, allow_root=True, server=server)
    table.launch({
        "job_sluid": "sJOB", "job_id": 9, "run_sluid": "sRUNS", "node_sluid": "sNODE",
        "node_name": "n01", "batch_host": True, "nodes": ["n01"], "segments": [],
        "restart_count": 0, "previous_run_sluid": "", "user": ME, "partition": "main",
        "name": "t", "command": ["sh", "-c", 'echo "$SLURM_JOB_ID $(id -un)"; exit 4'],
        "workdir": str(tmp_path), "env": {}, "output": "", "error": "", "time_limit_s": 0,
        "issued_ms": 0,
    })
    process = table._runs["sRUNS"].process
    assert process is not None
    process.wait(30)
    table.poll()

    assert reports == [("ReportJobExit", {"exit_code": 4, "signal": 0, "detail": "",
                                          "epilog_done": True})]
    assert (tmp_path / "sluice-9.out").read_text() == f"9 {ME}\n"


def test_a_spec_too_large_for_one_message_gets_a_supervisor_of_the_daemon_s_own(
    server: SupervisorServer, tmp_path: Path,
) -> None:
    big = {**ENV, "SLUICE_RUN_SLUID": "sBIG",  # 600 kB of environment, 60 kB a variable
           **{f"BIG{i}": "x" * 60_000 for i in range(10)}}
    process = Supervised.start(RunScope("sBIG"), ["sh", "-c", 'test ${#BIG9} -eq 60000'], big,
                               tmp_path, subprocess.DEVNULL, subprocess.DEVNULL, tmp_path,
                               server=server)
    parent = int(Path(f"/proc/{process.pid}/stat").read_text().rpartition(")")[2].split()[1])

    assert parent == os.getpid()  # started here, not forked by the server
    assert process.wait(30) == 0  # and the command saw its whole environment
