"""srun outside a job (cli/run_alloc.py, cli/alloc_hold.py): the allocation it asks for and
the status its holder ends with."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from cli.alloc_hold import step_status
from cli.run_alloc import HOLD_SCRIPT, _submit_parser, allocation_argv
from cli.run_step import add_parsers
from cli.submit import build_spec, with_script


def _run_args(*argv: str) -> argparse.Namespace:
    root = argparse.ArgumentParser()
    add_parsers(root.add_subparsers())
    return root.parse_args(["run", *argv])


def _spec(*argv: str) -> dict[str, object]:
    args = _run_args(*argv)
    command = [c for c in args.command if c != "--"]
    return build_spec(with_script(_submit_parser().parse_args(allocation_argv(args, command))))


def test_the_allocation_has_srun_s_shape_and_options() -> None:
    spec = _spec("-N", "2", "-n", "4", "-c", "2", "-t", "5", "-p", "gpu", "--mem", "4G",
                 "--gres", "gpu:a100:2", "--exclusive", "-x", "n03", "--", "python", "train.py")
    assert (spec["nodes_min"], spec["ntasks"], spec["cpus_per_task"]) == (2, 4, 2)
    assert (spec["time_limit_s"], spec["partition"], spec["mem_per_node_mb"]) == (300, "gpu", 4096)
    assert (spec["gpus_per_node"], spec["gpu_type"], spec["exclusive"]) == (2, "a100", True)
    assert spec["exclude"] == "n03" and spec["name"] == "python"
    assert (spec["output"], spec["error"], spec["requeue"]) == ("/dev/null", "/dev/null", "no")
    assert HOLD_SCRIPT in str(spec["script"]) and spec["command"] == []


def test_the_job_name_and_nodelist_are_srun_s() -> None:
    spec = _spec("-J", "mine", "-w", "n01,n02", "hostname")
    assert (spec["name"], spec["nodelist"]) == ("mine", "n01,n02")


def test_without_n_the_node_count_is_left_to_the_shard_and_n_1_stays_exact() -> None:
    """``srun -n 5`` sends the spec's default count (1, max 0), which the shard derives from
    the tasks; ``-N 1`` is sent as 1-1 (exact), ``-N 2`` as given; sbatch's ``-N 1-3`` too."""
    spec = _spec("-n", "5", "hostname")
    assert (spec["nodes_min"], spec["nodes_max"], spec["ntasks"]) == (1, 0, 5)
    for argv, counts in ((("-N", "1"), (1, 1)), (("-N", "2"), (2, 0))):
        spec = _spec(*argv, "-n", "6", "hostname")
        assert (spec["nodes_min"], spec["nodes_max"], spec["ntasks"]) == (*counts, 6)
    spec = build_spec(with_script(_submit_parser("sbatch").parse_args(
        ["-N", "1-3", "-n", "6", "--wrap", "true"])))
    assert (spec["nodes_min"], spec["nodes_max"], spec["ntasks"]) == (1, 3, 6)


@pytest.mark.parametrize(("step", "status"), [
    ({"state": "RUNNING", "exit_code": 0, "signal": 0}, None),
    ({"state": "COMPLETED", "exit_code": 0, "signal": 0}, 0),
    ({"state": "FAILED", "exit_code": 3, "signal": 0}, 3),
    ({"state": "CANCELLED", "exit_code": 0, "signal": 9}, 137),
    ({"state": "NODE_FAIL", "exit_code": 0, "signal": 0}, 1),
])
def test_the_holder_ends_with_the_step_s_status(step: dict[str, object], status: int | None
                                                 ) -> None:
    assert step_status(step) == status


def _alloc_args(*argv: str) -> argparse.Namespace:
    from cli.alloc_cmd import add_parsers as add_alloc

    root = argparse.ArgumentParser()
    add_alloc(root.add_subparsers())
    return root.parse_args(["alloc", *argv])


def test_salloc_s_allocation_holds_until_released_and_exports_nothing() -> None:
    from cli.alloc_cmd import RELEASE_SCRIPT

    args = _alloc_args("-N", "2", "-t", "30", "-J", "play")
    args.export = "NONE"
    spec = build_spec(with_script(_submit_parser("salloc").parse_args(
        allocation_argv(args, ["bash"], RELEASE_SCRIPT))))
    assert (spec["nodes_min"], spec["time_limit_s"], spec["name"]) == (2, 1800, "play")
    assert RELEASE_SCRIPT in str(spec["script"]) and spec["requeue"] == "no"
    assert set(spec.get("env") or {}) <= {"SLURM_UMASK", "SLURM_SUBMIT_DIR"}, spec.get("env")


def test_salloc_s_command_gets_the_allocation_s_variables_and_no_stale_ones() -> None:
    from cli.alloc_cmd import allocation_environment

    job = {"job_id": 17, "job_sluid": "s0J", "run_sluid": "s0R", "name": "play",
           "partition": "gpu", "nodes": ["n01", "n02", "n03"]}
    base = {"HOME": "/home/u", "SLURM_NTASKS": "99", "SLUICE_RUN_SLUID": "old",
            "SLUICE_API": "127.0.0.1:1"}
    env = allocation_environment(job, _alloc_args("-n", "6", "-c", "2"), base)
    assert (env["SLURM_JOB_ID"], env["SLURM_JOB_NODELIST"], env["SLURM_NNODES"]) == (
        "17", "n[01-03]", "3")
    assert (env["SLUICE_JOB_SLUID"], env["SLURM_JOB_SLUID"]) == ("s0J", "s0R")
    assert "SLUICE_RUN_SLUID" not in env  # the marker of a run's own processes (node kills)
    assert (env["SLURM_NTASKS"], env["SLURM_CPUS_PER_TASK"]) == ("6", "2")
    assert (env["HOME"], env["SLUICE_API"]) == ("/home/u", "127.0.0.1:1")
    assert "SLURM_NTASKS" not in allocation_environment(job, _alloc_args(), base)
    assert "SLURM_TASKS_PER_NODE" not in env  # the views said nothing of each node's CPUs


def test_salloc_s_layout_is_what_each_node_gave() -> None:
    """``salloc -N2 -n5`` on 4-CPU nodes holds 4+1 CPUs (Slurm's): its command sees them."""
    from cli.alloc_cmd import allocation_environment

    job = {"job_id": 18, "job_sluid": "s0J", "run_sluid": "s0R", "nodes": ["n01", "n02"],
           "alloc": {"n01": [4, 0, 0], "n02": [1, 0, 0]}}
    env = allocation_environment(job, _alloc_args("-N", "2", "-n", "5"), {})
    assert (env["SLURM_JOB_CPUS_PER_NODE"], env["SLURM_TASKS_PER_NODE"]) == ("4,1", "4,1")
    env = allocation_environment({**job, "alloc": {"n01": [4, 0, 0], "n02": [4, 0, 0]}},
                                 _alloc_args("-N", "2"), {})
    assert (env["SLURM_JOB_CPUS_PER_NODE"], env["SLURM_TASKS_PER_NODE"]) == ("4(x2)", "4(x2)")


def test_salloc_s_holder_ends_with_the_release_signal_s_status_and_leaves_nothing() -> None:
    import signal
    import subprocess
    import time

    from cli.alloc_cmd import RELEASE_SCRIPT

    for sig, status in ((signal.SIGUSR1, 0), (signal.SIGUSR2, 1)):
        holder = subprocess.Popen(["/bin/sh", "-c", RELEASE_SCRIPT])
        deadline = time.monotonic() + 30
        while not _waiting(holder.pid):
            assert holder.poll() is None and time.monotonic() < deadline, "it did not wait"
            time.sleep(0.05)
        sleeper = _children(holder.pid)
        assert len(sleeper) == 1, sleeper
        holder.send_signal(sig)
        assert holder.wait(30) == status
        while Path(f"/proc/{sleeper[0]}/stat").exists() and Path(  # a zombie until reaped
                f"/proc/{sleeper[0]}/stat").read_text().split()[2] != "Z":
            assert time.monotonic() < deadline, "the holder's sleep was left running"
            time.sleep(0.05)


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _waiting(pid: int) -> bool:
    """Whether the holder shell ``pid`` waits for its sleep (set its traps, started it)."""
    waiting = Path(f"/proc/{pid}/wchan").read_text()
    return bool(_children(pid)) and ("wait" in waiting or "sigsuspend" in waiting)
