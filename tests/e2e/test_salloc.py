"""salloc (``sluice alloc``, cli/alloc_cmd.py) end to end: real broker, worker, projections and
node daemons. salloc holds an allocation while its command runs here, srun in that command
runs steps on the allocation's nodes, and the allocation ends when the command does (or the
command is told when the allocation ends first)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.allocations import ended_named, outside_env
from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


def test_salloc_runs_its_command_here_with_steps_on_the_allocation_and_gives_it_back(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    script = ("echo here $SLURM_JOB_NODELIST $SLURM_NNODES $SLURM_NTASKS; "
              "srun -l sh -c 'echo $SLURMD_NODENAME $SLURM_PROCID'")
    done = subprocess.run(["salloc", "-N", "2", "-n", "2", "-J", "play", "sh", "-c", script],
                          cwd=tmp_path, env=outside_env(system), capture_output=True, text=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    lines = done.stdout.splitlines()
    assert lines[0] == "here n[01-02] 2 2", lines
    assert sorted(lines[1:]) == ["0: n01 0", "1: n02 1"], lines
    job = ended_named(system, "play")
    assert (job["state"], job["exit_code"]) == ("COMPLETED", 0), job
    assert f"salloc: Granted job allocation {job['job_id']}" in done.stderr, done.stderr
    assert f"salloc: Relinquishing job allocation {job['job_id']}" in done.stderr
    assert [s["step_id"] for s in job["steps"]] == [0], job["steps"]  # type: ignore[attr-defined]


def test_a_failed_command_is_salloc_s_status_and_fails_the_allocation(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    done = subprocess.run(["salloc", "-Q", "-J", "four", "sh", "-c", "exit 4"], cwd=tmp_path,
                          env=outside_env(system), capture_output=True, text=True, timeout=240,
                          check=False)
    assert done.returncode == 4, done.stdout + done.stderr + system.log_tail()
    assert done.stderr == "", done.stderr  # -Q: nothing but errors
    job = ended_named(system, "four")
    assert (job["state"], job["exit_code"]) == ("FAILED", 1), job


def test_an_allocation_cancelled_under_salloc_is_revoked_and_its_command_hung_up(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    salloc = subprocess.Popen(["salloc", "-J", "long", "sleep", "300"], cwd=tmp_path,
                              env=outside_env(system), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert salloc.stderr is not None
        granted = ""
        while "Granted" not in granted:
            granted = salloc.stderr.readline()
            assert granted, "salloc ended before its allocation was granted"
        job_id = granted.split()[-1]
        cancel = subprocess.run([sys.executable, "-m", "cli.main", "cancel", job_id],
                                env=outside_env(system), timeout=120, capture_output=True,
                                text=True, check=False)
        assert cancel.returncode == 0, cancel.stderr
        assert salloc.wait(120) == 128 + 1  # sleep ended by SIGHUP
        rest = salloc.stderr.read()
        assert f"salloc: Job allocation {job_id} has been revoked." in rest, rest
        assert "Relinquishing" not in rest, rest
    finally:
        salloc.kill()
        salloc.wait()
    assert ended_named(system, "long")["state"] == "CANCELLED"


def test_an_allocation_that_cannot_be_made_is_one_line(system: LocalSystem, tmp_path: Path,
                                                       ) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    done = subprocess.run(["salloc", "-N", "9", "true"], cwd=tmp_path, env=outside_env(system),
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("salloc: error: Unable to allocate resources: "), done.stderr
    assert "NodeCountTooLarge" in done.stderr and "Traceback" not in done.stderr
