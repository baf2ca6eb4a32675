"""srun's stdin for a step's tasks on a node (agents.node.step_input, agents.node.steps) on
real processes and a real srun-side socket (agents.node.step_io.StepServer), no Kafka: every
task reads it, one task, none, or task 0 in a pseudo-terminal."""

from __future__ import annotations

import base64
import queue
import time
from pathlib import Path
from typing import Any

import pytest

from agents.node.runs import RunTable
from agents.node.step_input import targets_of
from agents.node.step_io import StepServer
from agents.node.steps import StepTable
from tests.unit.node.test_runs import _launch

HOLD = 'while [ ! -e "$D/stop" ]; do sleep 0.05; done'


def _allocation(tmp_path: Path) -> tuple[RunTable, StepTable, list[Any]]:
    reports: list[Any] = []

    def report(name: str, _command: dict[str, Any], fields: dict[str, Any]) -> None:
        reports.append((name, fields))

    table = RunTable("n01", tmp_path, 1.0, report, allow_root=True)
    launch = _launch(tmp_path, ["sh", "-c", HOLD])
    launch["env"] = {"D": str(tmp_path)}
    table.launch(launch)
    return table, StepTable("n01", tmp_path, table, report, 1.0), reports


def _step(server: StepServer, command: list[str], tasks: int, mode: str) -> dict[str, Any]:
    return {"job_sluid": "sJOB", "job_id": 7, "run_sluid": "sRUN", "step_sluid": server.step,
            "step_id": 0, "nodes": ["n01"], "tasks_per_node": [tasks], "cpus_per_task": 1,
            "command": command, "workdir": "", "env": {}, "input": mode,
            "io_address": f"127.0.0.1:{server.port}", "io_token": server.token}


def _collect(steps: StepTable, server: StepServer, tasks: int,
             timeout_s: float = 15) -> tuple[dict[int, bytes], dict[int, int]]:
    out: dict[int, bytes] = {}
    exits: dict[int, int] = {}
    deadline = time.monotonic() + timeout_s
    while len(exits) < tasks and time.monotonic() < deadline:
        steps.poll()
        try:
            message = server.messages.get(timeout=0.05)
        except queue.Empty:
            continue
        rank = int(message["t"])
        if "exit" in message:
            exits[rank] = int(message["exit"])
        elif "b" in message:
            out[rank] = out.get(rank, b"") + base64.b64decode(message["b"])
        else:
            out[rank] = out.get(rank, b"") + str(message["d"]).encode()
    return out, exits


def _finish(tmp_path: Path, table: RunTable, reports: list[Any]) -> None:
    (tmp_path / "stop").write_text("")
    deadline = time.monotonic() + 10
    while not any(r[0] == "ReportJobExit" for r in reports) and time.monotonic() < deadline:
        table.poll()
        time.sleep(0.02)


def test_every_task_reads_all_of_srun_stdin_then_its_end(tmp_path: Path) -> None:
    table, steps, reports = _allocation(tmp_path)
    server = StepServer("tok", "sSTEP1", "127.0.0.1")
    try:
        steps.launch(_step(server, ["sh", "-c", "wc -c"], 2, "all"))
        data = b"x" * 300_000  # more than a pipe holds: written as the tasks read it
        for offset in range(0, len(data), 48_000):
            chunk = base64.b64encode(data[offset:offset + 48_000]).decode()
            assert server.send("n01", {"in": chunk}, 10)
        assert server.send("n01", {"eof": 1})
        out, exits = _collect(steps, server, 2)
        assert exits == {0: 0, 1: 0}
        assert {rank: text.strip() for rank, text in out.items()} == {0: b"300000", 1: b"300000"}
    finally:
        server.close()
        _finish(tmp_path, table, reports)


@pytest.mark.parametrize(("mode", "counts"), [("1", {0: b"0", 1: b"3"}),
                                              ("none", {0: b"0", 1: b"0"}),
                                              ("", {0: b"0", 1: b"0"})])
def test_one_task_or_none_reads_it(tmp_path: Path, mode: str, counts: dict[int, bytes]) -> None:
    table, steps, reports = _allocation(tmp_path)
    server = StepServer("tok", f"sSTEP{mode}", "127.0.0.1")
    try:
        steps.launch(_step(server, ["sh", "-c", "wc -c"], 2, mode))
        server.send("n01", {"in": base64.b64encode(b"abc").decode()}, 10)
        server.send("n01", {"eof": 1})
        out, exits = _collect(steps, server, 2)
        assert exits == {0: 0, 1: 0}
        assert {rank: text.strip() for rank, text in out.items()} == counts
    finally:
        server.close()
        _finish(tmp_path, table, reports)


def test_task_zero_of_a_pty_step_has_a_terminal_sized_as_srun_says(tmp_path: Path) -> None:
    table, steps, reports = _allocation(tmp_path)
    server = StepServer("tok", "sSTEPPTY", "127.0.0.1")
    script = "test -t 0 && test -t 1 && echo tty-ok; read line; stty size; echo got-$line"
    try:
        steps.launch(_step(server, ["sh", "-c", script], 2, "pty"))
        assert server.send("n01", {"winch": [33, 101]}, 10)  # before the line: stty sees it
        assert server.send("n01", {"in": base64.b64encode(b"hello\n").decode()})
        out, exits = _collect(steps, server, 2)
        assert exits == {0: 0, 1: 0}
        assert b"tty-ok" in out[0] and b"got-hello" in out[0], out
        assert b"33 101" in out[0], out
        assert 1 not in out, out  # the other tasks' output is dropped, as Slurm's --pty does
    finally:
        server.close()
        _finish(tmp_path, table, reports)


def test_a_garbled_or_hostile_message_feeds_nothing_and_breaks_nothing(tmp_path: Path) -> None:
    table, steps, reports = _allocation(tmp_path)
    server = StepServer("tok", "sSTEPBAD", "127.0.0.1")
    try:
        steps.launch(_step(server, ["sh", "-c", "wc -c"], 1, "all"))
        for message in ({"in": "not base64!"}, {"in": 5}, {"winch": [1, 2]}, {"eof": "yes"},
                        {"winch": "x"}):
            assert server.send("n01", message, 10)  # type: ignore[arg-type]
        assert server.send("n01", {"in": base64.b64encode(b"ok").decode()})
        assert server.send("n01", {"eof": 1})
        out, exits = _collect(steps, server, 1)
        assert exits == {0: 0} and out[0].strip() == b"2", out
    finally:
        server.close()
        _finish(tmp_path, table, reports)


def test_targets_of_each_mode() -> None:
    assert targets_of("all", range(2, 4)) == [2, 3]
    assert targets_of("3", range(2, 4)) == [3]
    assert targets_of("1", range(2, 4)) == []
    assert targets_of("pty", range(2)) == [0]
    assert targets_of("pty", range(2, 4)) == []
    assert targets_of("none", range(4)) == targets_of("", range(4)) == []
    assert targets_of("9" * 50, range(4)) == targets_of("-1", range(4)) == []


def test_srun_takes_one_connection_per_node_of_its_step() -> None:
    import json
    import socket

    server = StepServer("tok", "sSTEPX", "127.0.0.1", nodes=frozenset({"n01"}))
    hello = {"hello": 1, "token": "tok", "step": "sSTEPX"}
    try:
        first = socket.create_connection(("127.0.0.1", server.port))
        first.sendall((json.dumps({**hello, "node": "n01"}) + "\n").encode())
        assert server.send("n01", {"in": "YQ=="}, 10)
        for node in ("n01", "n99"):  # a second n01, a node not of the step: dropped
            other = socket.create_connection(("127.0.0.1", server.port))
            other.sendall((json.dumps({**hello, "node": node}) + "\n").encode())
            other.settimeout(5)
            assert other.recv(100) == b"", node  # closed without a byte of srun's stdin
            other.close()
        first.settimeout(5)
        assert json.loads(first.recv(100)) == {"in": "YQ=="}
        first.close()
    finally:
        server.close()
