"""What the run table asks the daemon's loop to wait for (``RunTable.watch``), on real
supervised processes: a run's start wakes the loop through its lifeline, its end through its
supervisor's pidfd, and the deadlines of starts, kills and time limits are named."""

from __future__ import annotations

import os
import pwd
import select
from pathlib import Path
from typing import Any

from agents.node.runs import Phase, RunTable
from agents.node.wakeups import Wakeups
from tests.unit.node.procs import token

Report = tuple[str, dict[str, Any]]
ME = pwd.getpwuid(os.getuid()).pw_name


def _launch(tmp_path: Path, command: list[str], time_limit_s: int = 0) -> dict[str, Any]:
    return {
        "job_sluid": "sJOB", "job_id": 7, "run_sluid": "sRUNW", "node_sluid": "sNODE",
        "node_name": "n01", "batch_host": True, "nodes": ["n01"], "segments": [],
        "restart_count": 0, "previous_run_sluid": "", "user": ME, "partition": "main",
        "name": "t", "command": command, "workdir": str(tmp_path), "env": {},
        "output": "/dev/null", "error": "", "time_limit_s": time_limit_s, "issued_ms": 0,
    }


def _table(tmp_path: Path, reports: list[Report], kill_wait_s: float = 5.0) -> RunTable:
    def report(name: str, _launch: dict[str, Any], fields: dict[str, Any]) -> None:
        reports.append((name, fields))

    return RunTable("n01", tmp_path, kill_wait_s, report, allow_root=True)


def _wait(wakeups: Wakeups, timeout_s: float) -> set[int]:
    poller = select.poll()
    for fd in wakeups.fds:
        poller.register(fd, select.POLLIN)
    return {fd for fd, _ in poller.poll(int(timeout_s * 1000))}


def _started(table: RunTable) -> None:
    """Wait (no polling: the lifeline wakes it) until the start of sRUNW is confirmed."""
    starting = Wakeups()
    table.watch(starting)
    assert len(starting.fds) == 2  # the supervisor's pidfd, and its lifeline until it speaks
    assert starting.deadline is not None
    assert starting.deadline - table._runs["sRUNW"].started == table.scripts.start_timeout_s
    assert _wait(starting, 30)
    table.poll()
    assert table._runs["sRUNW"].start_by is None


def test_a_run_s_end_makes_its_descriptor_readable_and_poll_then_reports_it(
    tmp_path: Path,
) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    table.launch(_launch(tmp_path, ["sh", "-c", "sleep 0.5; exit 5"]))
    _started(table)
    wakeups = Wakeups()
    table.watch(wakeups)
    assert len(wakeups.fds) == 1

    assert _wait(wakeups, 30) == wakeups.fds  # no polling: the end itself wakes the wait
    table.poll()

    assert reports == [("ReportJobExit", {"exit_code": 5, "signal": 0, "detail": "",
                                          "epilog_done": True})]
    after = Wakeups()
    table.watch(after)
    assert after.fds == set() and after.deadline is None  # the run is held, nothing runs


def test_a_running_job_names_its_time_limit_and_a_kill_its_sigkill_time(
    tmp_path: Path,
) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports, kill_wait_s=5.0)
    table.launch(_launch(tmp_path, ["sleep", token()], time_limit_s=100))
    try:
        _started(table)
        wakeups = Wakeups()
        table.watch(wakeups)
        assert wakeups.deadline is not None
        assert 104 < wakeups.deadline - table._runs["sRUNW"].started <= 105

        table.kill("sRUNW", "CANCELLED")
        assert table.phase("sRUNW") is Phase.KILLING
        killing = Wakeups()
        table.watch(killing)
        assert killing.deadline == table._runs["sRUNW"].deadline
        assert killing.deadline is not None and killing.deadline < wakeups.deadline

        assert _wait(killing, 30) == killing.fds  # SIGTERM ended it: the loop wakes
        table.poll()
        assert reports[0][0] == "ReportJobExit"
    finally:
        table.terminate_all()


def test_a_changed_time_limit_moves_the_nodes_own_deadline_and_an_unknown_run_is_ignored(
    tmp_path: Path,
) -> None:
    """``SetRunLimit`` (scontrol update TimeLimit= of a running job): the node's own
    enforcement, the fallback to the shard's TIMEOUT kill, follows the new limit."""
    table = _table(tmp_path, [], kill_wait_s=5.0)
    table.launch(_launch(tmp_path, ["sleep", token()], time_limit_s=100))
    try:
        _started(table)
        run = table._runs["sRUNW"]
        table.set_limit("sRUNW", 1000)
        raised = Wakeups()
        table.watch(raised)
        assert raised.deadline is not None
        assert 1004 < raised.deadline - run.started <= 1005 + 1e-6  # float sums: 1005.0000000000036
        table.set_limit("sRUNW", 0)  # UNLIMITED: no deadline of its own
        unlimited = Wakeups()
        table.watch(unlimited)
        assert unlimited.deadline is None
        table.set_limit("sOTHER", 1)  # a run this node does not hold: nothing
        assert "sOTHER" not in table._runs
    finally:
        table.terminate_all()
