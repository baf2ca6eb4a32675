"""srun is the user's own process: one that reads nothing, or never accepts, holds only its
own step, never the node daemon's loop (red team, 2026-12-07).

Before, the loop wrote a task's exit to srun itself (a blocking ``sendall``, under the lock the
output threads held while blocked in theirs) and connected to srun itself (up to 10 s): a user
who stopped srun (``kill -STOP``) while a task wrote 20 MB froze the daemon (no heartbeat: the
node went DOWN, other users' jobs ended NODE_FAIL), and killing srun then crashed it
(``None.sendall``: the socket cleared outside the lock). Real processes and sockets here; the
loop's calls (``launch``, ``poll``, ``kill``) are timed against bounds far below what the old
code blocked for (it never returned while srun read nothing).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.node.runs import RunTable, Scripts
from agents.node.steps import StepTable
from tests.unit.node.test_runs import _launch

FLOOD = ["sh", "-c", "head -c 20000000 /dev/zero | tr '\\0' a; echo; echo done"]
LOOP_BOUND_S = 2.0  # the old loop blocked for as long as srun read nothing


def _step(address: str, command: list[str], step: str = "sSTEP") -> dict[str, Any]:
    return {"job_sluid": "sJOB", "job_id": 7, "run_sluid": "sRUN", "step_sluid": step,
            "step_id": 0, "nodes": ["n01"], "tasks_per_node": [1], "cpus_per_task": 1,
            "command": command, "workdir": "", "env": {}, "input": "",
            "io_address": address, "io_token": "tok"}


def _timed(call: Callable[[], Any], slowest: list[float]) -> None:
    began = time.monotonic()
    call()
    slowest.append(time.monotonic() - began)


class _Node:
    def __init__(self, tmp_path: Path) -> None:
        self.reports: list[tuple[str, dict[str, Any]]] = []
        self.table = RunTable("n01", tmp_path, 1.0, self._report, Scripts(), allow_root=True)
        self.steps = StepTable("n01", tmp_path, self.table, self._report, 1.0)
        self.table.launch(_launch(tmp_path, ["sleep", "60"], run="sRUN"))

    def _report(self, name: str, _command: dict[str, Any], fields: dict[str, Any]) -> None:
        self.reports.append((name, fields))

    def ended(self) -> list[dict[str, Any]]:
        return [f for name, f in self.reports if name == "ReportStepExit"]

    def close(self) -> None:
        self.steps.terminate_all()
        self.table.terminate_all()


def test_an_srun_that_reads_nothing_then_resets_holds_neither_the_loop_nor_the_daemon(
        tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    node = _Node(tmp_path)
    slowest: list[float] = []
    try:
        port = listener.getsockname()[1]
        _timed(lambda: node.steps.launch(_step(f"127.0.0.1:{port}", FLOOD)), slowest)
        srun, _ = listener.accept()  # connected; it reads nothing from here on
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:  # the task writes into a connection nobody reads
            _timed(node.steps.poll, slowest)
            _timed(node.table.poll, slowest)
            time.sleep(0.02)
        _timed(lambda: node.steps.kill("sRUN", "sSTEP", "CANCELLED"), slowest)
        deadline = time.monotonic() + 30
        while not node.ended() and time.monotonic() < deadline:
            _timed(node.steps.poll, slowest)
            time.sleep(0.02)
        assert node.ended(), "the step's end was never reported"
        # srun killed at last: its connection reset under the daemon's threads
        srun.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        srun.close()
        for _ in range(50):
            _timed(node.steps.poll, slowest)  # nothing raises (the old None.sendall)
            time.sleep(0.02)
        assert max(slowest) < LOOP_BOUND_S, max(slowest)
        assert node.ended()[0]["detail"] == "killed: CANCELLED"
    finally:
        node.close()
        listener.close()


def test_an_srun_that_never_accepts_does_not_hold_the_launch(tmp_path: Path) -> None:
    """A listener whose accept queue is full: a connect to it waits (SYNs dropped) until its
    timeout, 10 s; the launch returns at once and the step runs, its output dropped."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):  # fill the accept queue (never accepted)
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    node = _Node(tmp_path)
    slowest: list[float] = []
    try:
        _timed(lambda: node.steps.launch(_step(f"127.0.0.1:{port}", ["true"])), slowest)
        deadline = time.monotonic() + 20
        while not node.ended() and time.monotonic() < deadline:
            _timed(node.steps.poll, slowest)
            time.sleep(0.02)
        assert node.ended() and node.ended()[0]["exit_code"] == 0
        assert max(slowest) < LOOP_BOUND_S, max(slowest)
    finally:
        node.close()
        for filler in fillers:
            filler.close()
        listener.close()
