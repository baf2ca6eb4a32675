"""A job whose working directory is on a hung mount, on a real node daemon, broker and worker.

The mount is a FUSE file system whose server never answers (``tests.unit.node.procs``). While
that job's start hangs, the same node starts and ends another job, and kills a third on its
cancel, at once; the node keeps heartbeating; the hung job fails ``StartTimedOut`` after the
daemon's ``--start-timeout``. Needs root and ``/dev/fuse``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER, facts, job_workdir
from tests.unit.node.procs import hung_directory, token

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

START_TIMEOUT_S = 8


@pytest.fixture
def hung(tmp_path: Path) -> Iterator[Path]:
    with hung_directory(tmp_path) as point:
        yield point


def _submit(system: LocalSystem, workdir: str, command: list[str]) -> str:
    sluid = system.client.sluids.new()
    spec = {"user": TEST_USER, "nodes_min": 1, "ntasks": 1, "command": command,
            "workdir": workdir, "requeue": "no"}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    return sluid


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def test_a_job_on_a_hung_mount_holds_only_its_own_start_and_fails_after_the_bound(
        system: LocalSystem, hung: Path) -> None:
    system.start_core()
    system.start_node("n01", 4, 8192, 0, "--start-timeout", str(START_TIMEOUT_S))
    system.wait_nodes_idle(1)

    stuck = _submit(system, str(hung), ["true"])
    system.wait(lambda: _job(system, stuck)["state"] == "RUNNING", 60, "the hung job to start")
    began = time.monotonic()
    sleeper = token()
    fine = _submit(system, job_workdir(), ["true"])
    cancelled = _submit(system, job_workdir(), ["sleep", sleeper])
    system.wait(lambda: _job(system, fine)["state"] == "COMPLETED", START_TIMEOUT_S,
                "another job on the node to run and end while the first one hangs")
    system.wait(lambda: _job(system, cancelled)["state"] == "RUNNING", START_TIMEOUT_S,
                "a third job to start")
    system.client.send(cancelled, "CancelJob", {"job_sluid": cancelled, "user": TEST_USER,
                                                "reason": ""})
    system.wait(lambda: _job(system, cancelled)["state"] == "CANCELLED", START_TIMEOUT_S,
                "the third job's cancel")
    print(f"another job completed and a third was started and cancelled "
          f"{time.monotonic() - began:.1f} s into the hung start")
    assert _job(system, stuck)["state"] == "RUNNING"  # still hanging: the bound is not up

    system.wait(lambda: _job(system, stuck)["state"] == "FAILED", START_TIMEOUT_S + 60,
                "the hung job to fail after the bound")
    assert time.monotonic() - began >= START_TIMEOUT_S - 3  # not before its bound
    [exit_report] = [f.record for f in facts(system.settings, "JobEnded")
                     if f.record["job_sluid"] == stuck]
    assert "StartTimedOut" in str(exit_report), exit_report
    node = system.client.get("/v1/nodes/n01")["node"]
    assert node["state"] in ("IDLE", "MIXED", "ALLOCATED", "COMPLETING"), node  # never DOWN
    # its heartbeats went on: the node never left service
    assert not [f.record for f in facts(system.settings, "NodeStateChanged")
                if f.record["state"] != "IDLE"]
