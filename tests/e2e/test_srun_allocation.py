"""srun outside a job (``sluice run``, cli/run_alloc.py) end to end: real broker, worker,
projections and node daemons. srun makes its own allocation, runs the step in it with the
output on its terminal, and the allocation ends with the step (its exit status)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.allocations import ended_named, job_named, outside_env
from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


def _srun(system: LocalSystem, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["srun", *argv], cwd=cwd, env=outside_env(system), capture_output=True,
                          text=True, timeout=240, check=False)


def _says(srun: subprocess.Popen[str], expected: str) -> None:
    """srun's next line on its standard error has ``expected`` (else: all it said)."""
    assert srun.stderr is not None
    line = srun.stderr.readline()
    if expected not in line:
        srun.kill()
        raise AssertionError(f"srun said {line!r}, not {expected!r}; then:\n{srun.stderr.read()}")


def test_srun_outside_a_job_allocates_runs_the_step_and_ends_with_it(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    work = tmp_path / "work"
    work.mkdir()
    done = _srun(system, ["-N", "2", "-n", "4", "-l", "-J", "hello", "sh", "-c",
                          "echo $SLURMD_NODENAME $SLURM_PROCID $SLURM_NTASKS"], work)
    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    assert sorted(done.stdout.splitlines()) == [  # Slurm's 3+1 CPUs on idle 4-CPU nodes
        "0: n01 0 4", "1: n01 1 4", "2: n01 2 4", "3: n02 3 4"], done.stdout
    job = ended_named(system, "hello")
    assert (job["state"], job["exit_code"]) == ("COMPLETED", 0), job
    [step] = job["steps"]  # type: ignore[misc]
    assert (step["step_id"], step["state"], step["ntasks"]) == (0, "COMPLETED", 4)
    assert not list(work.iterdir()), "srun's allocation writes no output file"
    per_node = _srun(system, ["-N", "2", "-l", "-J", "each", "sh", "-c",  # srun: -n = -N
                              "echo $SLURMD_NODENAME $SLURM_PROCID $SLURM_NTASKS"], work)
    assert per_node.returncode == 0, per_node.stdout + per_node.stderr + system.log_tail()
    assert sorted(per_node.stdout.splitlines()) == ["0: n01 0 2", "1: n02 1 2"], per_node.stdout


def test_a_failed_step_fails_srun_and_its_allocation_with_its_exit_code(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    done = _srun(system, ["-J", "three", "sh", "-c", "echo out; echo err >&2; exit 3"],
                 tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr + system.log_tail()
    assert done.stdout == "out\n" and "err\n" in done.stderr, (done.stdout, done.stderr)
    assert "task 0: Exited with exit code 3" in done.stderr, done.stderr
    job = ended_named(system, "three")
    assert (job["state"], job["exit_code"]) == ("FAILED", 3), job


def test_an_allocation_that_cannot_be_made_is_one_line_and_nothing_runs(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    done = _srun(system, ["-N", "9", "hostname"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("srun: error: Unable to allocate resources: "), done.stderr
    assert "NodeCountTooLarge" in done.stderr and "Traceback" not in done.stderr


def test_a_queued_srun_waits_says_so_and_two_interrupts_cancel_its_allocation(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    blocker = subprocess.run(
        [sys.executable, "-m", "cli.main", "submit", "--exclusive", "-J", "blocker",
         "--", "sleep", "300"], cwd=tmp_path, env=outside_env(system), capture_output=True,
        text=True, timeout=120, check=False)
    assert blocker.returncode == 0, blocker.stderr
    system.wait(lambda: job_named(system, "blocker").get("state") == "RUNNING", 120, "the blocker")
    srun = subprocess.Popen(["srun", "-J", "waiter", "sleep", "300"], cwd=tmp_path,
                            env=outside_env(system), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert srun.stderr is not None
        line = srun.stderr.readline()
        assert "queued and waiting for resources" in line, line
        subprocess.run([sys.executable, "-m", "cli.main", "cancel",
                        str(job_named(system, "blocker")["job_id"])], env=outside_env(system),
                       check=True, timeout=120, capture_output=True)
        assert "has been allocated resources" in srun.stderr.readline()
        system.wait(lambda: job_named(system, "waiter").get("steps"), 120, "srun's step")
        srun.send_signal(signal.SIGINT)  # one Ctrl-C: srun reports its tasks, they run on
        _says(srun, "srun: interrupt (one more within 1 sec to abort)")
        _says(srun, "task(s) 0: running")
        time.sleep(1.5)
        assert srun.poll() is None
        srun.send_signal(signal.SIGINT)  # two within a second: the step and job are ended
        time.sleep(0.2)
        srun.send_signal(signal.SIGINT)
        assert srun.wait(60) == 130
    finally:
        srun.kill()
        srun.wait()
    try:
        job = ended_named(system, "waiter")
    except AssertionError as exc:  # what srun said and the job's last row, to tell why
        said = srun.stderr.read() if srun.stderr is not None else ""
        raise AssertionError(f"srun said:\n{said}\nthe job: {job_named(system, 'waiter')}\n"
                             f"{exc}") from None
    assert job["state"] == "CANCELLED", job
