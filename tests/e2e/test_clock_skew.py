"""A node daemon whose clock is off: real daemons, worker and broker; the skewed daemon's
interpreter reads a wall clock shifted by a ``sitecustomize`` (its monotonic clock, the kernel's
and the broker's are untouched), as a host whose NTP stopped would."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER, facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

TIMEOUT_S = 3.0
"""SLUICE_NODE_TIMEOUT of this test (node daemons heartbeat every 0.5 s)."""

_SKEWED_TIME = """\
import os, time
_skew = float(os.environ["SKEW_S"])
_time, _time_ns = time.time, time.time_ns
time.time = lambda: _time() + _skew
time.time_ns = lambda: _time_ns() + int(_skew * 1e9)
"""


def _start_skewed_node(system: LocalSystem, name: str, skew_s: float, tmp_path: Path) -> None:
    site = tmp_path / "skewed-clock"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_SKEWED_TIME)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    system.start(name, "node", "--name", name, "--cpus", "2", "--mem", "4096", "--gpus", "0",
                 "--heartbeat", "0.5", "--kill-wait", "3",
                 env={"PYTHONPATH": path, "SKEW_S": str(skew_s)})


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def test_a_node_whose_clock_is_30_s_behind_stays_in_service_and_runs_its_job(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start("worker", "worker", "--loglevel", "info",
                 env={"SLUICE_NODE_TIMEOUT": str(TIMEOUT_S)})
    system.start("projections", "projections")
    system.start_nodes(1, cpus=2, mem=4096)
    _start_skewed_node(system, "late01", -30.0, tmp_path)
    system.wait_nodes_idle(2)
    time.sleep(4 * TIMEOUT_S)  # its heartbeats all look 30 s old: it went DOWN every check

    sluid = system.client.sluids.new()
    spec = {"user": TEST_USER, "command": ["sh", "-c", "sleep 2"], "nodelist": "late01",
            "workdir": str(tmp_path), "time_limit_s": 60}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    system.wait(lambda: _job(system, sluid)["state"] == "COMPLETED", 60, "the job to complete")

    changes = [r.record for r in facts(system.settings, "NodeStateChanged")
               if r.record["name"] == "late01"]
    assert [c["state"] for c in changes if c["state"] == "DOWN"] == []
    assert _job(system, sluid)["nodes"] == ["late01"]
    assert _job(system, sluid)["restart_count"] == 0
    log = (system.settings.home / "logs" / "worker.log").read_text()
    assert "before it was read" in log  # the skew is logged
