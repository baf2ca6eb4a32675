"""srun inside a job: the step's share of the job it asks for (``--exact``, ``--overlap``,
``--mem``, ``--gres``), and what it says while its step waits, as Slurm's srun."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from cli.run_step import _Creation, _pass_on
from cli.step_shape import gpus_asked, step_shape
from cli.step_signals import StepSignals


def _args(**given: Any) -> argparse.Namespace:
    values: dict[str, Any] = {"exact": False, "whole": False, "overlap": False,
                              "exclusive": False, "cpus_per_task": 0, "mem": 0, "gres": "",
                              "gpus": 0, "gpus_per_node": 0}
    return argparse.Namespace(**{**values, **given})


@pytest.mark.parametrize(("given", "exact"), [
    ({}, False),  # Slurm's default: the step holds all the job's CPUs on its nodes (--whole)
    ({"exact": True}, True),
    ({"cpus_per_task": 2}, True),  # -c given implies --exact
    ({"exclusive": True}, True),  # --exclusive inside a job is --exact
    ({"whole": True}, False),
])
def test_exact_comes_from_exact_c_and_exclusive(given: dict[str, Any], exact: bool) -> None:
    assert step_shape(_args(**given), 1, True, {})["exact"] is exact


def test_srun_s_input_variables_slurm_exact_and_slurm_overlap_count_as_the_options() -> None:
    env = {"SLURM_EXACT": "1", "SLURM_OVERLAP": "1"}
    shape = step_shape(_args(), 1, True, env)
    assert (shape["exact"], shape["overlap"]) == (True, True)
    assert step_shape(_args(whole=True), 1, True, env)["exact"] is False  # --whole wins


def test_the_shape_carries_overlap_memory_gpus_and_who_picks_the_nodes() -> None:
    shape = step_shape(_args(overlap=True, mem=2048, gres="gpu:a100:2"), 2, False, {})
    assert shape == {"exact": False, "overlap": True, "pick_nodes": False,
                     "mem_per_node_mb": 2048, "gpus_per_node": 2}


@pytest.mark.parametrize(("given", "nodes", "gpus"), [
    ({}, 1, -1),  # none asked: the job's GPUs
    ({"gres": "none"}, 1, 0),
    ({"gres": "gpu"}, 1, 1),
    ({"gres": "gpu:3"}, 1, 3),
    ({"gres": "gpu:h100"}, 1, 1),
    ({"gpus_per_node": 2}, 3, 2),
    ({"gpus": 3}, 2, 2),  # -G 3 over 2 nodes: 2 on each
    ({"gpus_per_node": "a100:2"}, 1, 2),
])
def test_gpus_asked(given: dict[str, Any], nodes: int, gpus: int) -> None:
    assert gpus_asked(_args(**given), nodes) == gpus


def test_a_gres_that_is_no_gpu_is_refused() -> None:
    with pytest.raises(ValueError, match="gpu"):
        gpus_asked(_args(gres="mps:2"), 1)


def test_a_waiting_step_is_announced_once_then_its_creation_as_slurms_srun_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    started: list[list[str]] = []
    creation = _Creation({"job_id": 12}, started.append)
    assert creation.see({"state": "PENDING", "step_id": -1}) is None
    assert creation.see({"state": "PENDING", "step_id": -1}) is None
    assert creation.see({"state": "RUNNING", "step_id": 3, "nodes": ["n2"]}) is None
    assert creation.see({"state": "RUNNING", "step_id": 3, "nodes": ["n2"]}) is None
    assert capsys.readouterr().err.splitlines() == [
        "srun: Job 12 step creation temporarily disabled, retrying (Requested nodes are busy)",
        "srun: Step created for StepId=12.3"]
    assert started == [["n2"]]  # srun's stdin goes to the nodes the shard picked


def test_a_step_that_started_at_once_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert _Creation({"job_id": 12}).see({"state": "RUNNING", "step_id": 0}) is None
    assert capsys.readouterr().err == ""


def test_a_step_that_ended_before_it_was_created_is_srun_s_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _Creation({"job_id": 12}).see({"state": "CANCELLED", "step_id": -1}) == 1
    assert capsys.readouterr().err == (
        "srun: error: Unable to create step for job 12: Job/step already completing or "
        "completed\n")


class _Client:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def send(self, key: str, name: str, record: dict[str, Any]) -> None:
        self.sent.append((name, record))


def test_ctrl_c_while_the_step_waits_cancels_it(capsys: pytest.CaptureFixture[str]) -> None:
    client, signals = _Client(), StepSignals()
    signals.on_signal(2)
    job = {"job_id": 12, "job_sluid": "sJOB"}
    _pass_on(client, signals, job, "sSTEP", {"state": "PENDING", "step_id": -1}, {}, 1)  # type: ignore[arg-type]
    assert [(name, record.get("step_sluid"), record.get("signal")) for name, record in
            client.sent] == [("CancelJob", "sSTEP", None)]  # cancelled, not signalled
    assert signals.aborted
    assert capsys.readouterr().err == "srun: Cancelled pending job step with signal 2\n"
