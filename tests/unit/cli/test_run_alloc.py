"""srun outside a job (cli/run_alloc.py, cli/alloc_hold.py): the allocation it asks for and
the status its holder ends with."""

from __future__ import annotations

import argparse

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
