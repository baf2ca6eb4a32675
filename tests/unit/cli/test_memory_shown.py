"""A job's memory as Slurm's commands print it. Seen live (2026-12-08): ``sbatch --mem-per-cpu
100 -c 2`` showed ``MinMemoryNode=0``, ``TRES=cpu=2,node=1`` (no mem), squeue ``%m`` ``0`` and
sacct ``ReqMem`` ``0``: the request was invisible. Slurm prints ``MinMemoryCPU=100M``,
``mem=200M`` in the TRES, ``%m`` ``100M``, ``ReqMem`` ``200M``; and its units: ``--mem 1G`` is
``1G`` everywhere (Sluice said ``1024M``): ``convert_num_unit`` with ``CONVERT_NUM_UNIT_EXACT``,
the default of squeue, sacct and scontrol (up a unit only while whole or a half)."""

from __future__ import annotations

from typing import Any

import pytest

from cli.formats import mem_size
from cli.job_fields import job_mem_mb, job_values
from cli.sacct_fields import add_derived
from cli.show_cmd import job_lines

NOW = 1_800_000_000_000


@pytest.mark.parametrize(("mb", "shown"), [
    (0, "0"), (100, "100M"), (1024, "1G"), (2000, "2000M"), (1536, "1.50G"),
    (1024 * 1024, "1T"), (1025, "1025M"), (8192, "8G"),
])
def test_slurms_units(mb: int, shown: str) -> None:
    assert mem_size(mb) == shown


def _pending(**more: Any) -> dict[str, Any]:
    return {"job_id": 7, "job_sluid": "s7", "user": "nobody", "state": "PENDING",
            "submit_ms": NOW, "start_ms": 0, "end_ms": 0, "nodes": [], "nodes_min": 1,
            "ntasks": 1, "cpus_per_task": 2, "array_task_id": -1, **more}


def _shown(row: dict[str, Any]) -> str:
    return "\n".join(job_lines(row, NOW, "7"))


def test_mem_per_cpu_is_shown_per_cpu_and_in_the_tres() -> None:
    row = _pending(mem_per_cpu_mb=100)
    assert job_mem_mb(row) == 200
    shown = _shown(row)
    assert "MinMemoryCPU=100M" in shown and "MinMemoryNode" not in shown
    assert "TRES=cpu=2,node=1,mem=200M" in shown
    values = job_values(row, NOW, {})
    assert (values["min_memory"], values["req_mem"]) == ("100M", "200M")


def test_mem_per_node_in_slurms_units() -> None:
    row = _pending(mem_per_node_mb=1024, nodes_min=2)
    shown = _shown(row)
    assert "MinMemoryNode=1G" in shown and "mem=2G" in shown
    values = job_values(row, NOW, {})
    assert (values["min_memory"], values["req_mem"]) == ("1G", "2G")
    add_derived(values, "alpha")
    assert values["req_tres"] == "billing=2,cpu=2,mem=2G,node=2"
    none = job_values(_pending(), NOW, {})
    assert (none["min_memory"], none["req_mem"]) == ("0", "0")
    assert "MinMemoryNode=0 " in _shown(_pending())


def test_a_running_jobs_tres_holds_what_its_nodes_gave_it() -> None:
    """An ``--exclusive`` job without ``--mem`` holds its nodes' memory: Slurm's TRES says so
    (``mem=8G``); it said no mem at all."""
    row = _pending(state="RUNNING", start_ms=NOW - 1000, nodes=["n1"], cpus_per_task=1,
                   alloc={"n1": [4, 8192, 0]}, exclusive=True)
    assert "TRES=cpu=4,node=1,mem=8G" in _shown(row)


class _Jobs:
    def job(self, ref: str) -> dict[str, Any]:
        del ref
        return {"nodes": ["n1"], "alloc": {"n1": [1, 0, 0]}, "state": "RUNNING"}


def test_a_nodes_tres_in_slurms_units_without_zero_counts() -> None:
    from cli.show_cmd import node_lines

    node = {"name": "n1", "cpus": 4, "mem_mb": 8192, "state": "MIXED", "jobs": [5]}
    shown = "\n".join(node_lines(node, _Jobs()))  # type: ignore[arg-type]
    assert "CfgTRES=cpu=4,mem=8G" in shown and "AllocTRES=cpu=1\n" in f"{shown}\n"
