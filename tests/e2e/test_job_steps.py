"""Batch scripts, job steps and the job environment end to end (issue 15, items 1, 2, 3, 6):
real broker, worker, projections and node daemons; scripts submitted with ``sluice submit`` and
with ``sbatch`` from the opt-in directory of Slurm's command names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.node.environment import COMPAT_BIN
from tests.e2e.harness import LocalSystem

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

ISSUE_SCRIPT = """#!/bin/sh
#SBATCH -N 2
#SBATCH -J name
#SBATCH -o out-%j.txt
srun sh -c 'echo $SLURMD_NODENAME'
"""


def _run(system: LocalSystem, argv: list[str], cwd: Path, slurm_path: bool = False,
         ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **system.settings.as_env()}
    env.pop("SLUICE_PYTHON", None)
    if slurm_path:  # the user's opt-in: Slurm's names first, sluice itself on PATH
        env["PATH"] = f"{COMPAT_BIN}:{Path(sys.executable).parent}:{env.get('PATH', '')}"
    else:
        argv = [sys.executable, "-m", "cli.main", *argv]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=240, check=False)


def _job_id(done: subprocess.CompletedProcess[str]) -> str:
    line = next(x for x in done.stdout.splitlines() if x.startswith("Submitted batch job"))
    return line.split()[3]


def _steps(system: LocalSystem, job_id: str) -> list[dict[str, object]]:
    return list(system.client.get(f"/v1/jobs/{job_id}")["job"].get("steps", []))


@pytest.mark.parametrize("how", ["sluice", "sbatch"])
def test_the_issues_batch_script_runs_srun_on_both_nodes(
    system: LocalSystem, tmp_path: Path, how: str,
) -> None:
    system.start_core()
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    (tmp_path / "job.sh").write_text(ISSUE_SCRIPT)
    if how == "sluice":
        done = _run(system, ["submit", "-W", "--timeout", "180", "job.sh"], tmp_path)
    else:
        done = _run(system, ["sbatch", "-W", "--timeout", "180", "job.sh"], tmp_path, True)
    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    job_id = _job_id(done)
    out = (tmp_path / f"out-{job_id}.txt").read_text()
    assert sorted(out.split()) == ["n01", "n02"], out
    assert system.client.get(f"/v1/jobs/{job_id}")["job"]["name"] == "name"
    history = _run(system, ["history", "-j", job_id], tmp_path, slurm_path=False)
    ids = [line.split()[0] for line in history.stdout.splitlines()[1:]
           if not line.startswith("---")]  # sacct's header, its dashes, then the lines
    assert ids == [job_id, f"{job_id}.batch", f"{job_id}.0"], history.stdout
    script = _run(system, ["show", "job", job_id, "--script"], tmp_path)
    assert script.stdout == ISSUE_SCRIPT


DDP_SCRIPT = """#!/bin/bash
#SBATCH --job-name=ddp
#SBATCH --nodes=2
#SBATCH --ntasks=4
#SBATCH --output=ddp-%j.out
set -e
MASTER=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
echo "master=$MASTER nodes=$SLURM_NNODES tasks=$SLURM_NTASKS per-node=$SLURM_TASKS_PER_NODE"
srun --ntasks-per-node=1 bash -c 'echo "launcher $SLURM_PROCID/$SLURM_NTASKS on $SLURMD_NODENAME"'
srun -l -n 4 bash -c 'echo "rank $SLURM_PROCID local $SLURM_LOCALID"' | sort
"""


def test_a_torchrun_style_script_runs_through_slurms_command_names(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    (tmp_path / "ddp.sh").write_text(DDP_SCRIPT)
    done = _run(system, ["sbatch", "-W", "--timeout", "180", "ddp.sh"], tmp_path, True)
    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    job_id = _job_id(done)
    lines = (tmp_path / f"ddp-{job_id}.out").read_text().splitlines()
    # Slurm's cons_tres on idle 4-CPU nodes: -N2 -n4 holds 3+1 CPUs, tasks 3,1
    assert lines[0] == "master=n01 nodes=2 tasks=4 per-node=3,1", lines
    assert sorted(lines[1:3]) == ["launcher 0/2 on n01", "launcher 1/2 on n02"], lines
    assert lines[3:] == ["0: rank 0 local 0", "1: rank 1 local 1", "2: rank 2 local 2",
                         "3: rank 3 local 0"], lines
    sacct = _run(system, ["sacct", "-j", job_id], tmp_path, True)
    ids = [line.split()[0] for line in sacct.stdout.splitlines()[1:]
           if not line.startswith("---")]
    assert ids == [job_id, f"{job_id}.batch", f"{job_id}.0", f"{job_id}.1"], sacct.stdout
    one = _run(system, ["sacct", "-j", f"{job_id}.1,{job_id}.batch", "-n", "-P", "-o", "JobID"],
               tmp_path, True)
    assert one.stdout.split() == [f"{job_id}.batch", f"{job_id}.1"], one.stdout  # sacct's order


def test_the_environment_of_a_gpu_job_and_its_tasks_has_slurms_values(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    for name in ("g01", "g02"):
        system.start_node(name, 8, 8192, 2)
    system.wait_nodes_idle(2)
    (tmp_path / "env.sh").write_text(
        "#!/bin/sh\n#SBATCH -N 2 -n 4 -c 2 --gres gpu:1\n#SBATCH -o env-%j.out\n"
        "env | sort > batch-env.txt\n"
        "srun -l sh -c 'echo T $SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $SLURMD_NODENAME "
        "$SLURM_STEP_ID $SLURM_NTASKS $CUDA_VISIBLE_DEVICES'\n")
    done = _run(system, ["submit", "-W", "--timeout", "180", "env.sh"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    job_id = _job_id(done)
    env = dict(line.split("=", 1) for line in
               (tmp_path / "batch-env.txt").read_text().splitlines() if "=" in line)
    expected = {
        "SLURM_JOB_ID": job_id, "SLURM_NTASKS": "4", "SLURM_NPROCS": "4",
        "SLURM_CPUS_PER_TASK": "2", "SLURM_CPUS_ON_NODE": "6",  # Slurm's 3 tasks and 1
        "SLURM_JOB_CPUS_PER_NODE": "6,2", "SLURM_TASKS_PER_NODE": "3,1",
        "SLURM_JOB_NUM_NODES": "2", "SLURM_NNODES": "2", "SLURM_NODELIST": "g[01-02]",
        "SLURM_JOB_NODELIST": "g[01-02]", "SLURM_GPUS_ON_NODE": "1", "SLURM_JOB_GPUS": "0",
        "CUDA_VISIBLE_DEVICES": "0", "SLURM_NODEID": "0", "SLURM_PROCID": "0",
        "SLURMD_NODENAME": "g01", "SLURM_CLUSTER_NAME": system.settings.cluster,
        "SLURM_JOB_NAME": "env.sh",
    }
    assert {k: env.get(k) for k in expected} == expected
    assert env["PATH"].split(":")[0] == str(COMPAT_BIN)
    assert env["SLURM_SUBMIT_HOST"]
    lines = sorted((tmp_path / f"env-{job_id}.out").read_text().split("\n"))
    tasks = sorted(line for line in lines if " T " in line)
    assert tasks == [
        "0: T 0 0 0 g01 0 4 0", "1: T 1 1 0 g01 0 4 0",
        "2: T 2 2 0 g01 0 4 0", "3: T 3 0 1 g02 0 4 0",
    ], lines


def test_a_failed_task_ends_the_step_with_its_exit_code(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    (tmp_path / "fail.sh").write_text(
        "#!/bin/sh\n#SBATCH -N 2\n"
        "srun sh -c 'if [ $SLURM_PROCID = 1 ]; then exit 3; fi; exec sleep 300'\n"
        "echo srun said $?\n"
        "srun true\n")
    done = _run(system, ["submit", "-W", "--timeout", "180", "fail.sh"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    job_id = _job_id(done)
    out = (tmp_path / f"sluice-{job_id}.out").read_text()
    assert "srun said 3" in out and "task 1: Exited with exit code 3" in out, out
    steps = {s["step_id"]: s for s in _steps(system, job_id)}
    assert (steps[0]["state"], steps[0]["exit_code"]) == ("FAILED", 3)
    assert (steps[1]["state"], steps[1]["exit_code"]) == ("COMPLETED", 0)


def test_a_step_on_a_node_outside_the_allocation_is_refused(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    (tmp_path / "out.sh").write_text("#!/bin/sh\n#SBATCH -N 1\nsrun -w n01,n02 hostname\n")
    done = _run(system, ["submit", "-W", "--timeout", "180", "out.sh"], tmp_path)
    job_id = _job_id(done)
    out = (tmp_path / f"sluice-{job_id}.out").read_text()
    assert done.returncode == 1, done.stdout + done.stderr
    # srun's words for a refused step (before: "sluice run: step refused: NotInAllocation: …")
    assert f"srun: error: Unable to create step for job {job_id}: " in out, out
    assert " not allocated to job" in out and "[NotInAllocation]" in out, out
    assert _steps(system, job_id) == []


def test_a_failed_node_ends_the_step(system: LocalSystem, tmp_path: Path) -> None:
    system.start("worker", "worker", "--loglevel", "info", env={"SLUICE_NODE_TIMEOUT": "2"})
    system.start("projections", "projections")
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    (tmp_path / "long.sh").write_text("#!/bin/sh\n#SBATCH -N 2 --no-requeue\n"
                                      "srun sleep 300\n")
    done = _run(system, ["submit", "long.sh"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    job_id = _job_id(done)
    system.wait(lambda: [s for s in _steps(system, job_id) if s["state"] == "RUNNING"], 120,
                "the step to run")
    system.kill("n02")  # SIGKILL of the daemon: the node stops answering
    [step] = system.wait(
        lambda: [s for s in _steps(system, job_id) if s["state"] != "RUNNING"], 120,
        "the step to end")
    assert (step["state"], step["reason"]) == ("NODE_FAIL", "node n02 failed")


def test_wrap_runs_its_command_as_a_batch_script(system: LocalSystem, tmp_path: Path) -> None:
    system.start_core()
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    done = _run(system, ["submit", "-N", "2", "-o", "wrap-%j.out", "-W", "--timeout", "180",
                         "--wrap", "srun sh -c 'echo $SLURMD_NODENAME'; echo done"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr + system.log_tail()
    job_id = _job_id(done)
    lines = (tmp_path / f"wrap-{job_id}.out").read_text().split()
    assert sorted(lines[:2]) == ["n01", "n02"] and lines[2:] == ["done"], lines
    assert system.client.get(f"/v1/jobs/{job_id}")["job"]["name"] == "wrap"
