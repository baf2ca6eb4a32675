"""Rows a forged fact made (any client may write the ledger in PLAINTEXT mode) are shown, never
stop the command of every user who lists them. Red team: one forged ``JobStarted`` on a node
named ``bad,name`` made every ``squeue`` and ``sacct`` exit 1 with ``name 'bad,name' cannot be
written in a host list``; a time limit of 2^62 s made ``scontrol show job`` raise
``OverflowError``."""

from __future__ import annotations

from typing import Any

from cli.formats import host_list, slurm_time
from cli.history_cmd import history_rows
from cli.job_fields import job_values
from cli.show_cmd import job_lines

NOW = 1_796_637_071_283


def _row(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "job_id": 1, "job_sluid": "s00XKDVDNA0000", "name": "forged", "user": "mallory",
        "account": "", "partition": "main", "state": "RUNNING", "submit_ms": NOW,
        "start_ms": NOW, "end_ms": 0, "time_limit_s": 60, "nodes": ["n1"], "runs": [],
        "flags": [], "reason": "None"}
    return {**row, **changes}


def test_a_node_name_no_host_list_holds_is_listed_as_it_is() -> None:
    row = _row(nodes=["bad,name", "n2"])
    assert job_values(row, NOW, {})["nodelist"] == "bad,name,n2"
    assert any("NodeList=bad,name,n2" in line for line in job_lines(row, NOW, "1"))
    history_rows([row], NOW, {}, True, True)
    assert host_list(["n1", "n2", "n3"]) == "n[1-3]"


def test_a_time_past_what_the_c_library_shows_is_unknown() -> None:
    row = _row(time_limit_s=2**62)  # its end: start + 2^62 s
    assert any("EndTime=N/A" in line or "EndTime=Unknown" in line
               for line in job_lines(row, NOW, "1"))
    assert slurm_time(2**72, "Unknown") == "Unknown"
    history_rows([row], NOW, {}, True, True)
