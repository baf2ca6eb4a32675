"""Signals to running jobs end to end: real broker, worker, projections and node daemons.

(a) ``sluice cancel -s USR1 --batch ID`` (scancel): the batch script's trap runs, the job keeps
running and then ends by itself, COMPLETED; a pending job's signal is refused (JobPending).
(b) ``#SBATCH --signal=B:USR1@N`` with a short time limit: the trap runs before the TIMEOUT.
(c) ``sluice cancel -s USR1 ID`` (scancel's default scope): the step's task gets it, the batch
shell does not.
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

TRAPPING = """#!/bin/sh
#SBATCH -o out-%j.txt
trap 'date +%s.%N >> trapped; echo trapped' USR1
echo started > started
while [ ! -e stop ]; do sleep 0.2; done
echo done
"""

STEPPED = """#!/bin/sh
#SBATCH -o out-%j.txt
trap 'echo batch >> got' USR1
srun sh -c 'trap "echo step >> got" USR1; echo > started; while [ ! -e stop ]; do sleep 0.2; done' &
while [ ! -e stop ]; do sleep 0.2; done
wait
"""

WARNED = """#!/bin/sh
#SBATCH -o out-%j.txt
#SBATCH -t 0:20
#SBATCH --signal=B:USR1@12
trap 'date +%s.%N >> trapped; echo warned' USR1
while :; do sleep 0.2; done
"""


def _cli(system: LocalSystem, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **system.settings.as_env()}
    env.pop("SLUICE_PYTHON", None)
    return subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _submit(system: LocalSystem, tmp_path: Path, script: str, *options: str) -> str:
    (tmp_path / "job.sh").write_text(script)
    done = _cli(system, ["submit", *options, "job.sh"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    line = next(x for x in done.stdout.splitlines() if x.startswith("Submitted batch job"))
    return line.split()[3]


def _job(system: LocalSystem, job_id: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{job_id}")["job"])


def _ended(system: LocalSystem, job_id: str, timeout_s: float) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        job = _job(system, job_id)
        return job if job["state"] not in ("PENDING", "RUNNING") and job.get("end_ms") else None
    return dict(system.wait(done, timeout_s, f"job {job_id} to end"))


def test_scancel_signal_batch_runs_the_trap_and_the_job_keeps_running(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    held = _submit(system, tmp_path, TRAPPING, "-H")
    refused = _cli(system, ["cancel", "-s", "USR1", held], tmp_path)
    assert refused.returncode == 1 and "JobPending" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert _cli(system, ["cancel", held], tmp_path).returncode == 0

    job_id = _submit(system, tmp_path, TRAPPING)
    system.wait((tmp_path / "started").exists, 60, "the batch script to start")
    signalled = _cli(system, ["cancel", "-s", "USR1", "--batch", job_id], tmp_path)
    assert signalled.returncode == 0, signalled.stdout + signalled.stderr + system.log_tail()
    system.wait((tmp_path / "trapped").exists, 30, "the USR1 trap to run")
    time.sleep(1.0)
    job = _job(system, job_id)
    assert job["state"] == "RUNNING" and not job.get("kill_reason"), job
    assert job["last_signal"]["signal"] == 10 and job["last_signal"]["scope"] == "BATCH"
    shown = _cli(system, ["show", "job", job_id], tmp_path)
    assert "LastSignal=USR1:BATCH:REQUESTED@" in shown.stdout, shown.stdout

    (tmp_path / "stop").write_text("")
    job = _ended(system, job_id, 60)
    assert job["state"] == "COMPLETED", job
    out = (tmp_path / f"out-{job_id}.txt").read_text().split()
    assert out == ["trapped", "done"], out
    assert len((tmp_path / "trapped").read_text().split()) == 1  # delivered once


def test_sbatch_signal_warns_the_batch_shell_before_the_time_limit(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    job_id = _submit(system, tmp_path, WARNED)
    job = _ended(system, job_id, 120)
    assert job["state"] == "TIMEOUT", job
    assert (tmp_path / "trapped").exists(), (tmp_path / f"out-{job_id}.txt").read_text()
    [warned] = [float(t) * 1000 for t in (tmp_path / "trapped").read_text().split()]  # once
    # due 20 - 12 = 8 s after the run's start (the JobStarted's time), decided on the first
    # Tick at or after it: never early (the same host's clock; 0.5 s for the rounding), and
    # before the TIMEOUT ends the run
    due = job["start_ms"] + 8_000
    assert due - 500 <= warned < job["end_ms"], (job["start_ms"], warned, job["end_ms"])
    assert job["last_signal"]["reason"] == "TIME_LIMIT" and job["last_signal"]["signal"] == 10
    assert "warned" in (tmp_path / f"out-{job_id}.txt").read_text()


def test_scancel_signal_by_default_reaches_the_steps_tasks_not_the_batch_shell(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    job_id = _submit(system, tmp_path, STEPPED)
    system.wait((tmp_path / "started").exists, 60, "the step's task to start")
    signalled = _cli(system, ["cancel", "--signal=SIGUSR1", job_id], tmp_path)
    assert signalled.returncode == 0, signalled.stdout + signalled.stderr + system.log_tail()
    system.wait((tmp_path / "got").exists, 30, "the step's USR1 trap to run")
    time.sleep(1.0)
    assert (tmp_path / "got").read_text().split() == ["step"]  # not the batch shell
    assert _job(system, job_id)["state"] == "RUNNING"
    (tmp_path / "stop").write_text("")
    assert _ended(system, job_id, 60)["state"] == "COMPLETED"


# --overlap: two steps of a one-CPU job run at once only so (steps hold their CPUs, Slurm
# 20.11+: without it the second would wait for the first to end)
TWO_STEPS = """#!/bin/sh
#SBATCH -o out-%j.txt
srun --overlap sh -c 'trap "echo zero >> got" USR1; echo > started0
           while [ ! -e stop ]; do sleep 0.2; done' &
while [ ! -e started0 ]; do sleep 0.1; done
srun --overlap sh -c 'trap "echo one >> got" USR1; echo > started1
           while [ ! -e stop ]; do sleep 0.2; done' &
wait
echo after-steps
"""

FORWARDING = """#!/bin/sh
#SBATCH -o out-%j.txt
srun sh -c 'trap "echo task-usr1 >> got; exit 7" USR1; echo > started
           while :; do sleep 0.2; done' &
SRUN=$!
while [ ! -e started ]; do sleep 0.1; done
sleep 1
kill -USR1 $SRUN
wait $SRUN
echo "srun-status $?" >> got
"""


def test_scancel_id_step_signals_or_cancels_that_step_alone_and_the_job_runs_on(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    job_id = _submit(system, tmp_path, TWO_STEPS)
    system.wait(lambda: (tmp_path / "started1").exists() and len(
        [s for s in _job(system, job_id).get("steps") or [] if s["state"] == "RUNNING"]) == 2,
        60, "both steps running")
    signalled = _cli(system, ["cancel", "-s", "USR1", f"{job_id}.1"], tmp_path)
    assert signalled.returncode == 0, signalled.stdout + signalled.stderr + system.log_tail()
    system.wait((tmp_path / "got").exists, 30, "step 1's USR1 trap")
    time.sleep(1.0)
    assert (tmp_path / "got").read_text().split() == ["one"]  # not step 0, not the batch shell
    cancelled = _cli(system, ["cancel", f"{job_id}.0"], tmp_path)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    steps = system.wait(lambda: {s["step_id"]: s["state"] for s in _job(system, job_id)["steps"]
                                 if s["state"] != "RUNNING"} or None, 60, "step 0 to end")
    assert steps == {0: "CANCELLED"}, steps
    assert _job(system, job_id)["state"] == "RUNNING"  # the job and step 1 run on
    missing = _cli(system, ["cancel", f"{job_id}.7"], tmp_path)
    assert missing.returncode == 1 and "Invalid job id specified" in missing.stderr
    (tmp_path / "stop").write_text("")
    job = _ended(system, job_id, 60)
    assert job["state"] == "COMPLETED", job
    assert "after-steps" in (tmp_path / f"out-{job_id}.txt").read_text()


def test_srun_passes_a_signal_it_gets_on_to_its_tasks(system: LocalSystem, tmp_path: Path,
                                                     ) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    job_id = _submit(system, tmp_path, FORWARDING)
    job = _ended(system, job_id, 90)
    assert job["state"] == "COMPLETED", job
    assert (tmp_path / "got").read_text().split() == ["task-usr1", "srun-status", "7"]
