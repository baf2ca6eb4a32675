"""A job asked ``--mem-per-cpu`` sees Slurm's ``SLURM_MEM_PER_CPU`` (and no
``SLURM_MEM_PER_NODE``), as sbatch sets it in the job's environment. Seen live (2026-12-08):
``sbatch --mem-per-cpu=100 -N2 -n3`` ran with ``SLURM_MEM_PER_NODE=200`` and no
``SLURM_MEM_PER_CPU``, so a script sizing its memory from ``SLURM_MEM_PER_CPU`` found none."""

from __future__ import annotations

from typing import Any

import pytest

from agents.node.environment import run_environment
from cli.run_alloc import _submit_parser
from cli.submit import build_spec, with_script


def _env(*argv: str) -> dict[str, str]:
    spec = build_spec(with_script(_submit_parser("sbatch").parse_args([*argv, "--wrap", "x"])))
    return dict(spec["env"])


def _launch(env: dict[str, str]) -> dict[str, Any]:
    return {"job_sluid": "s1", "job_id": 42, "run_sluid": "s00DJXT1ZWR001", "nodes": ["g01"],
            "user": "alice", "partition": "main", "name": "j", "command": ["/w/j.sh"],
            "workdir": "/w", "env": env, "ntasks": 2, "cpus_per_task": 1, "alloc_cpus": [2],
            "alloc_mem_mb": [200], "alloc_gpus": [0], "array_task_id": -1}


def test_sbatch_sets_the_variable_of_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_MEM_PER_NODE", "9999")  # sbatch inside a --mem job
    assert _env("--mem-per-cpu", "100").get("SLURM_MEM_PER_CPU") == "100"
    assert "SLURM_MEM_PER_NODE" not in _env("--mem-per-cpu", "100")
    assert _env("--mem", "1G").get("SLURM_MEM_PER_NODE") == "1024"
    assert "SLURM_MEM_PER_NODE" not in _env() and "SLURM_MEM_PER_CPU" not in _env()


def test_the_node_sets_no_per_node_memory_for_a_job_asked_per_cpu() -> None:
    env = run_environment(_launch({"SLURM_MEM_PER_CPU": "100"}), "g01")
    assert env.get("SLURM_MEM_PER_CPU") == "100" and "SLURM_MEM_PER_NODE" not in env
    assert run_environment(_launch({}), "g01").get("SLURM_MEM_PER_NODE") == "200"
