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
        "SLUICE_ALLOW_ROOT_JOBS": "true",  # the test may run as root: its jobs are root's
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


def test_sluice_up_reports_a_taken_port_before_starting_anything(
    kafka_bootstrap: str, tmp_path: Path, unique: str,
) -> None:
    import socket

    home = tmp_path / "home"
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = f"127.0.0.1:{squatter.getsockname()[1]}"
        env = {
            **os.environ, "KAFKA_BOOTSTRAP": kafka_bootstrap, "SLUICE_HOME": str(home),
            "SLUICE_TOPIC_PREFIX": f"up{unique}", "SLUICE_CLUSTER": f"up{unique}",
            "SLUICE_API": f"127.0.0.1:{free_port()}",
        }
        up = subprocess.run(
            [sys.executable, "-m", "cli.main", "up", "--nodes", "1", "--worker-metrics", taken],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )
    assert up.returncode == 1, up.stdout + up.stderr
    assert f"{taken} (for the worker) is already in use" in up.stderr
    assert "--worker-metrics" in up.stderr
    assert "Traceback" not in up.stderr
    assert not list((home / "run").glob("*.pid")), "nothing was started"
