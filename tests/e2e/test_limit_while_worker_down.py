"""A job's time limit passes while the worker is down: its node daemon kills the run itself
(the shard's TIMEOUT kill cannot come) and, once a worker is back, the job ends TIMEOUT, as
Slurm's would, not FAILED by SIGTERM (reliability round, 2026-12-07). Real worker SIGKILLed,
real node daemon and broker."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER, facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

LIMIT_S = 15
KILL_WAIT_S = 3  # the harness's --kill-wait


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def test_a_limit_that_passes_while_the_worker_is_down_ends_the_job_timeout(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    sluid = system.client.sluids.new()
    spec = {"user": TEST_USER, "command": ["sleep", "300"], "workdir": str(tmp_path),
            "time_limit_s": LIMIT_S}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    system.wait(lambda: _job(system, sluid)["state"] == "RUNNING", 90, "the job to run")
    system.kill("worker", signal.SIGKILL)

    time.sleep(LIMIT_S + KILL_WAIT_S + 8)  # the node's own kill comes at limit + kill wait
    system.start("worker", "worker", "--loglevel", "info")
    system.wait(lambda: _job(system, sluid)["state"] not in ("RUNNING", "COMPLETING"), 90,
                "the job to end")
    assert _job(system, sluid)["state"] == "TIMEOUT"
    [ended] = [r.record for r in facts(system.settings, "JobEnded")
               if r.record["job_sluid"] == sluid]
    assert (ended["state"], ended["reason"]) == ("TIMEOUT", "TIMEOUT")
