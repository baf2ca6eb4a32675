"""Steps of one job do not share its CPUs (Slurm 20.11+), end to end: real broker, worker,
projections and node daemon; a batch script's sruns through Slurm's command names.

In a job of 2 CPUs, two ``srun -n1 --exact`` run side by side; a third waits, srun saying
Slurm's ``step creation temporarily disabled, retrying (Requested nodes are busy)``, while an
``srun --overlap`` runs at once beside them; when the first step ends the third starts
(``Step created for StepId=N.3``), and the job completes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

BUSY = "srun: Job {} step creation temporarily disabled, retrying (Requested nodes are busy)"

# each *.started file is written whole, then renamed into place: the test reads it the moment
# it exists (an empty file read there failed a CI run: "could not convert string to float")
SCRIPT = """#!/bin/sh
#SBATCH -n 2
#SBATCH -o out-%j.txt
srun -n1 --exact sh -c 'echo "$(date +%s.%N) $SLURM_CPUS_ON_NODE" > a.tmp && mv a.tmp a.started
                        while [ ! -e a.stop ]; do sleep 0.1; done' 2> a.err &
srun -n1 --exact sh -c 'echo "$(date +%s.%N) $SLURM_CPUS_ON_NODE" > b.tmp && mv b.tmp b.started
                        while [ ! -e b.stop ]; do sleep 0.1; done' 2> b.err &
while [ ! -e a.started ] || [ ! -e b.started ]; do sleep 0.1; done
srun -n1 --exact sh -c 'date +%s.%N > c.tmp && mv c.tmp c.started' 2> c.err &
while ! grep -q "step creation temporarily disabled" c.err; do sleep 0.1; done
srun -n1 --overlap sh -c '[ -e c.started ] && echo "overlap ran, c ran" ||
                          echo "overlap ran, c waits"' > d.out 2> d.err
wait
"""


def _job(system: LocalSystem, job_id: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{job_id}")["job"])


def _until(what: str, predicate: Any, timeout_s: float = 90) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_exact_steps_run_side_by_side_a_third_waits_for_one_to_end_and_overlap_runs_at_once(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1, cpus=4)
    system.wait_nodes_idle(1)
    (tmp_path / "job.sh").write_text(SCRIPT)
    env = {**os.environ, **system.settings.as_env()}
    env.pop("SLUICE_PYTHON", None)
    done = subprocess.run([sys.executable, "-m", "cli.main", "submit", "job.sh"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    job_id = next(x for x in done.stdout.splitlines()
                  if x.startswith("Submitted batch job")).split()[3]
    files = {name: tmp_path / name for name in (
        "a.started", "b.started", "c.started", "c.err", "d.out", "a.stop", "b.stop")}
    try:
        _until("two steps side by side", lambda: files["a.started"].exists()
               and files["b.started"].exists())
        # each holds one of the job's two CPUs (SLURM_CPUS_ON_NODE is the step's)
        assert files["a.started"].read_text().split()[1] == "1"
        _until("the third srun to wait", lambda: files["c.err"].exists()
               and BUSY.format(job_id) in files["c.err"].read_text())
        assert not files["c.started"].exists()
        steps = {s["step_sluid"]: s for s in _job(system, job_id).get("steps", [])}
        assert sorted((s["step_id"], s["state"]) for s in steps.values())[:3] == [
            (-1, "PENDING"), (0, "RUNNING"), (1, "RUNNING")], steps
        _until("the overlap step", lambda: files["d.out"].exists()
               and files["d.out"].read_text().strip())
        assert files["d.out"].read_text().strip() == "overlap ran, c waits"
        time.sleep(1.5)
        assert not files["c.started"].exists()  # nothing freed a CPU yet
        files["a.stop"].write_text("")
        ended_a = time.time()
        _until("the third step to start", files["c.started"].exists)
        assert float(files["c.started"].read_text()) >= ended_a - 0.5
        _until("srun to say so", lambda: f"srun: Step created for StepId={job_id}.3"
               in files["c.err"].read_text())
    finally:
        files["a.stop"].write_text("")
        files["b.stop"].write_text("")
    job = system.wait(lambda: (j := _job(system, job_id))["state"] not in ("PENDING", "RUNNING")
                      and j, 90, "the job to end")
    assert job["state"] == "COMPLETED", job
    ids = sorted((s["step_id"], s["state"]) for s in job["steps"])
    assert ids == [(0, "COMPLETED"), (1, "COMPLETED"), (2, "COMPLETED"), (3, "COMPLETED")], ids
    assert files["c.err"].read_text().splitlines() == [
        BUSY.format(job_id), f"srun: Step created for StepId={job_id}.3"]


SPREAD = """#!/bin/sh
#SBATCH -N 2 -n 2
#SBATCH -o out-%j.txt
for i in 1 2; do
  srun -N1 -n1 --exact sh -c "echo \\$SLURMD_NODENAME > on.$i
                              while [ ! -e stop ]; do sleep 0.1; done" 2> err.$i &
done
wait
"""


def test_steps_without_w_spread_over_the_jobs_free_nodes(
    system: LocalSystem, tmp_path: Path,
) -> None:
    """srun named no node: the shard picks one without a step, so two one-task steps of a
    2-node job of one CPU a node run at once, one on each node (srun guessed the first)."""
    system.start_core()
    system.start_nodes(2, cpus=1)
    system.wait_nodes_idle(2)
    (tmp_path / "job.sh").write_text(SPREAD)
    env = {**os.environ, **system.settings.as_env()}
    env.pop("SLUICE_PYTHON", None)
    done = subprocess.run([sys.executable, "-m", "cli.main", "submit", "job.sh"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    job_id = next(x for x in done.stdout.splitlines()
                  if x.startswith("Submitted batch job")).split()[3]
    try:
        _until("both steps", lambda: (tmp_path / "on.1").exists() and (tmp_path / "on.2").exists())
        nodes = sorted((tmp_path / f"on.{i}").read_text().strip() for i in (1, 2))
        assert nodes == ["n01", "n02"], nodes
    finally:
        (tmp_path / "stop").write_text("")
    job = system.wait(lambda: (j := _job(system, job_id))["state"] not in ("PENDING", "RUNNING")
                      and j, 90, "the job to end")
    assert job["state"] == "COMPLETED", job
    assert "temporarily disabled" not in (tmp_path / "err.1").read_text() + (
        tmp_path / "err.2").read_text()
