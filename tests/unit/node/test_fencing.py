"""Fencing a stopped daemon's runs: a supervisor started with ``fence_s`` kills its run when the
daemon stops feeding the lifeline for that long (a ``SIGSTOP``-ed or hung daemon, whose node
the scheduler declares DOWN and whose jobs it may start elsewhere), and leaves a fed run, or a
run started without a fence, alone."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

from agents.node.proctrack import RunScope
from agents.node.supervised import Supervised
from tests.unit.node.procs import token, wait_count, wait_gone


def _start(argv: list[str], tmp_path: Path, fence_s: float) -> Supervised:
    scope = RunScope("sF" + uuid.uuid4().hex[:12].upper())
    env = {**os.environ, "SLUICE_RUN_SLUID": scope.run_sluid}
    return Supervised.start(scope, argv, env, tmp_path, subprocess.DEVNULL,
                            subprocess.DEVNULL, tmp_path, fence_s=fence_s)


def _escaper(t: str) -> list[str]:
    return ["sh", "-c", f"( setsid env -i sleep {t} & ) ; sleep {t} & wait"]


def test_a_run_whose_lifeline_goes_unfed_is_killed_whole(tmp_path: Path) -> None:
    t = token()
    process = _start(_escaper(t), tmp_path, fence_s=1.0)
    wait_count(t, 2)
    assert process.wait(15) == 128 + signal.SIGKILL  # unfed for 1 s: the supervisor fenced it
    assert wait_gone(t, 5) == []


def test_a_fed_run_lives_past_the_fence_and_ends_as_its_command_does(tmp_path: Path) -> None:
    process = _start(["sh", "-c", "sleep 2.5; exit 5"], tmp_path, fence_s=1.0)
    deadline = time.monotonic() + 15
    while process.poll() is None and time.monotonic() < deadline:
        process.feed()  # as the daemon does every heartbeat
        time.sleep(0.2)
    assert process.wait(1) == 5


def test_without_a_fence_an_unfed_run_goes_on(tmp_path: Path) -> None:
    process = _start(["sh", "-c", "sleep 2; exit 4"], tmp_path, fence_s=0.0)
    assert process.wait(15) == 4
