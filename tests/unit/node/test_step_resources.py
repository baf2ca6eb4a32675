"""A step's tasks see what the step holds on the node, not the whole job's (Slurm's slurmstepd):
``SLURM_CPUS_ON_NODE`` is the step's CPUs there, and its GPUs are its own among the run's —
two steps of one GPU each see two different devices, an ``--overlap`` step the run's lowest,
a ``--gres=none`` step none."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agents.node.gpus import GpuSlots
from agents.node.steps import StepTable


def _table(tmp_path: Path) -> StepTable:
    gpus = GpuSlots(4)
    gpus.bind("sOTHER", 1)  # another run holds device 0
    gpus.bind("sRUN", 3)  # this run holds 1, 2, 3
    runs = SimpleNamespace(gpus=gpus)
    return StepTable("n01", tmp_path, runs, lambda *_: None, 1.0)  # type: ignore[arg-type]


def _step(table: StepTable, sluid: str, **fields: Any) -> dict[str, str]:
    command = {"run_sluid": "sRUN", "step_sluid": sluid, **fields}
    table._steps[sluid] = SimpleNamespace(command=command)  # type: ignore[assignment]
    return table._resources(command)


def test_two_one_gpu_steps_see_different_devices_of_the_run_and_cpus_are_the_steps(
    tmp_path: Path,
) -> None:
    table = _table(tmp_path)
    first = _step(table, "sA", cpus=2, gpus=1)
    second = _step(table, "sB", cpus=1, gpus=1)
    assert (first["SLURM_CPUS_ON_NODE"], first["CUDA_VISIBLE_DEVICES"]) == ("2", "1")
    assert (second["SLURM_CPUS_ON_NODE"], second["CUDA_VISIBLE_DEVICES"]) == ("1", "2")
    assert second["SLURM_STEP_GPUS"] == second["GPU_DEVICE_ORDINAL"] == "2"
    assert second["SLURM_GPUS_ON_NODE"] == "1"
    shared = _step(table, "sC", gpus=2, overlap=True)
    assert shared["CUDA_VISIBLE_DEVICES"] == "1,2" and "SLURM_CPUS_ON_NODE" not in shared
    assert _step(table, "sD", gpus=0)["CUDA_VISIBLE_DEVICES"] == ""  # --gres=none: none
    del table._steps["sA"]  # the first step ended: its device is free again
    table._gpus.pop("sA")
    assert _step(table, "sE", gpus=2)["CUDA_VISIBLE_DEVICES"] == "1,3"


def test_a_command_without_counts_leaves_the_runs_variables(tmp_path: Path) -> None:
    assert _step(_table(tmp_path), "sA") == {}
