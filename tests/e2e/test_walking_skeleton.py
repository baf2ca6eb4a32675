"""The foundation end to end: real broker, worker, projections and node daemons."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


def _sluice(system: LocalSystem, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, **system.settings.as_env()}
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *argv], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )


def test_a_two_node_job_runs_to_completed_with_its_output_on_disk(
    system: LocalSystem, tmp_path: Path
) -> None:
    system.start_core()
    system.start_nodes(3)
    system.wait_nodes_idle(3)
    work = tmp_path / "work"
    work.mkdir()

    done = _sluice(system, "submit", "-N", "2", "-W", "--timeout", "90", "--",
                   "sh", "-c", 'echo "hi from $SLURMD_NODENAME of $SLURM_JOB_NODELIST"',
                   cwd=work)

    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    assert "Submitted batch job 1" in done.stdout
    assert "ended COMPLETED" in done.stdout
    output = (work / "sluice-1.out").read_text()
    assert output.startswith("hi from n0")
    job = system.client.get("/v1/jobs/1")["job"]
    assert job["state"] == "COMPLETED"
    assert len(job["nodes"]) == 2
    assert len(job["runs"]) == 1 and job["runs"][0]["exit_code"] == 0
    nodes = {n["name"]: n for n in system.client.get("/v1/nodes")["nodes"]}
    assert all(n["state"] == "IDLE" and not n["runs"] for n in nodes.values())


def test_queue_nodes_and_show_print_the_projection(system: LocalSystem, tmp_path: Path) -> None:
    system.start_core()
    system.start_nodes(1, cpus=2)
    system.wait_nodes_idle(1)

    submitted = _sluice(system, "submit", "-J", "sleeper", "-t", "5", "--", "sleep", "30",
                        cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stderr
    system.wait(lambda: system.client.get("/v1/jobs/1")["job"]["state"] == "RUNNING", 60,
                "job 1 running")

    queue = _sluice(system, "queue", cwd=tmp_path)
    nodes = _sluice(system, "nodes", "-N", cwd=tmp_path)
    show = _sluice(system, "show", "job", "1", cwd=tmp_path)
    cancel = _sluice(system, "cancel", "1", cwd=tmp_path)

    assert "sleeper" in queue.stdout and " R " in queue.stdout
    assert "n01" in nodes.stdout and " mix" in nodes.stdout  # 1 of 2 CPUs in use (sinfo -N: %6t)
    assert "JobState=RUNNING" in show.stdout  # scontrol show job's layout
    assert cancel.returncode == 0
    system.wait(lambda: system.client.get("/v1/jobs/1")["job"]["state"] == "CANCELLED", 60,
                "job 1 cancelled")


def test_an_impossible_submission_is_rejected_with_a_named_reason(
    system: LocalSystem, tmp_path: Path
) -> None:
    system.start_core()

    rejected = _sluice(system, "submit", "-N", "0", "--", "true", cwd=tmp_path)

    assert rejected.returncode == 1
    assert "Batch job submission failed: Node count specification invalid" in rejected.stderr
    assert "[InvalidNodeCount]" in rejected.stderr
