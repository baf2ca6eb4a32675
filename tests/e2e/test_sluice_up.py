"""The README's run command, as a new user would try it: sluice up, submit, down."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import free_port

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


def test_sluice_up_runs_a_two_node_job_and_sluice_down_stops_everything(
    kafka_bootstrap: str, tmp_path: Path, unique: str,
) -> None:
    home = tmp_path / "home"
    env = {
        **os.environ, "KAFKA_BOOTSTRAP": kafka_bootstrap, "SLUICE_HOME": str(home),
        "SLUICE_TOPIC_PREFIX": f"up{unique}", "SLUICE_CLUSTER": f"up{unique}",
        "SLUICE_API": f"127.0.0.1:{free_port()}",
        "SLUICE_WORKER_METRICS": f"127.0.0.1:{free_port()}",
    }

    def sluice(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cli.main", *argv], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=240, check=False,
        )

    try:
        up = sluice("up", "--nodes", "2", "--cpus", "2", "--mem", "2048")
        assert up.returncode == 0, up.stdout + up.stderr
        assert "Sluice is up" in up.stdout and "2 nodes" in up.stdout
        job = sluice("submit", "-N", "2", "-W", "--", "sh", "-c", "echo hi from $SLURMD_NODENAME")
        assert job.returncode == 0, job.stdout + job.stderr
        assert "ended COMPLETED" in job.stdout
        assert (tmp_path / "sluice-1.out").read_text() == "hi from node01\n"
        pids = [int(p.read_text()) for p in (home / "run").glob("*.pid")]
        assert len(pids) == 4  # worker, projections, two nodes
    finally:
        down = sluice("down")
    assert down.returncode == 0, down.stderr
    assert "stopped worker" in down.stdout
    assert not list((home / "run").glob("*.pid"))
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or b"cli.main" not in Path(
            f"/proc/{pid}/cmdline").read_bytes()
