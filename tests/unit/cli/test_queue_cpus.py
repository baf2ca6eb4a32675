"""squeue's ``%C`` (``-O NumCPUs``) is the job's CPUs as slurmctld counts them: those its nodes
gave it once it runs, else those it asks. Before, it was ``-n`` times ``-c`` whatever the
allocation: a 3-node job of one CPU a node showed 1 where ``scontrol show job`` said
``NumCPUs=3`` (found 2026-12-07)."""

from __future__ import annotations

from typing import Any

from cli.job_fields import job_values

NOW = 1_796_000_000_000


def _row(**fields: Any) -> dict[str, Any]:
    return {"job_id": 40, "job_sluid": "s40", "state": "PENDING", "start_ms": 0,
            "submit_ms": NOW, "nodes": [], "ntasks": 1, "cpus_per_task": 1, "nodes_min": 1,
            **fields}


def test_a_running_job_counts_the_cpus_its_nodes_gave_it() -> None:
    row = _row(state="RUNNING", start_ms=NOW, nodes=["n1", "n2", "n3"], nodes_min=3,
               alloc={"n1": [1, 0, 0], "n2": [1, 0, 0], "n3": [1, 0, 0]})
    assert job_values(row, NOW, {})["cpus"] == "3"
    exclusive = _row(state="RUNNING", start_ms=NOW, nodes=["n1"], alloc={"n1": [64, 0, 0]})
    assert job_values(exclusive, NOW, {})["cpus"] == "64"


def test_a_pending_job_counts_what_it_asks_one_cpu_a_node_at_least() -> None:
    assert job_values(_row(ntasks=4, cpus_per_task=2), NOW, {})["cpus"] == "8"
    assert job_values(_row(nodes_min=3), NOW, {})["cpus"] == "3"
