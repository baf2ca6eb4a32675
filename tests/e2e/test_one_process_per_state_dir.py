"""A second daemon of a node, or a second worker, started on a state directory a live process
holds is refused at once: one line, exit status 2, and the first process's runs untouched.

Before, a second ``sluice node --name n01`` on the same ``SLUICE_HOME`` killed the first
daemon's runs as "left by earlier runs" and then launched every run its node was sent a second
time, so each job ran twice at once (reliability round, 2026-12-07).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER, facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


def _job(system: LocalSystem, sluid: str) -> dict[str, object]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def _submit(system: LocalSystem, workdir: Path, name: str) -> str:
    """A job that appends its pid to ``<name>.pids`` and sleeps 300 s."""
    sluid = system.client.sluids.new()
    command = ["sh", "-c", f'echo $$ >> "{name}.pids"; exec sleep 300']
    spec = {"user": TEST_USER, "command": command, "workdir": str(workdir), "name": name,
            "time_limit_s": 600}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    return sluid


def _exit_code(system: LocalSystem, name: str) -> int | None:
    """The exit status of the harness's process ``name`` within 60 s; killed (and None) when it
    is still running then. It is no longer the harness's either way."""
    process = system.processes.pop(name)
    try:
        return process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def test_a_second_daemon_of_a_node_is_refused_and_its_jobs_run_once(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1, cpus=4)
    system.wait_nodes_idle(1)
    first = _submit(system, tmp_path, "first")
    system.wait(lambda: _job(system, first)["state"] == "RUNNING", 90, "the first job to run")
    pids = tmp_path / "first.pids"
    system.wait(lambda: pids.exists() and pids.read_text().strip(), 30, "the first job's pid")

    # the same name, the same state directory
    system.start("n01-again", "node", "--name", "n01", "--cpus", "4", "--mem", "8192",
                          "--heartbeat", "0.5", "--kill-wait", "3")
    assert _exit_code(system, "n01-again") == 2
    log = (system.settings.home / "logs" / "n01-again.log").read_text()
    assert "is in use by another process" in log

    _submit(system, tmp_path, "later")  # sent to the node after the second tried
    later_pids = tmp_path / "later.pids"
    system.wait(lambda: later_pids.exists() and later_pids.read_text().strip(), 90,
                "the later job's pid")
    time.sleep(3)  # a second launcher would have written its line by now
    assert len(pids.read_text().split()) == 1
    assert len(later_pids.read_text().split()) == 1
    assert _alive(int(pids.read_text()))
    assert _job(system, first)["state"] == "RUNNING"
    ended = [r.record for r in facts(system.settings, "JobEnded")]
    assert ended == []


def test_a_second_worker_on_a_held_state_directory_is_refused(
    system: LocalSystem,
) -> None:
    system.start_core()
    system.wait((system.settings.home / "worker" / "owned.json").exists, 90,
                "the worker to own its shard")
    system.start("worker-2", "worker", env={"SLUICE_WORKER_METRICS": ""})
    assert _exit_code(system, "worker-2") == 2
    log = (system.settings.home / "logs" / "worker-2.log").read_text()
    assert "is in use by another process" in log
    assert "Traceback" not in log
