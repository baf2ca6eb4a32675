"""sinfo's ``%C`` (CPUs allocated/idle/other/total) and ``-e``, so ``sinfo -Nel`` (the usual
way to list nodes) works. Before, ``%C`` was an unknown field and ``-Nel`` a usage error
(``-e`` was not an option), exit 2 (found 2026-12-07)."""

from __future__ import annotations

from typing import Any

import pytest

from cli import nodes_cmd
from cli.main import main

NODES = [{"name": f"node0{i}", "state": state, "cpus": 4, "mem_mb": 4096, "partitions": ["main"],
          "jobs": []} for i, state in ((1, "MIXED"), (2, "MIXED"), (3, "IDLE"), (4, "DOWN"))]
JOBS = [{"job_id": 7, "state": "RUNNING", "nodes": ["node01", "node02"],
         "alloc": {"node01": [3, 0, 0], "node02": [3, 0, 0]}},
        {"job_id": 8, "state": "PENDING", "nodes": [], "alloc": {}}]


class _Client:
    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        if path.startswith("/v1/nodes"):
            return {"nodes": [dict(n) for n in NODES]}
        if path.startswith("/v1/jobs"):
            return {"jobs": JOBS}
        if path.startswith("/v1/config"):
            return {"config": {}}
        return {"reservations": []}


@pytest.fixture(autouse=True)
def _views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nodes_cmd, "Client", _Client)
    monkeypatch.setattr(nodes_cmd, "mark_reservations", lambda client, nodes: None)


def test_percent_c_counts_cpus_allocated_idle_other_and_total(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nodes", "-o", "%N %C"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "NODELIST CPUS(A/I/O/T)", "node[01-04] 6/6/4/16"]
    assert main(["nodes", "-N", "-h", "-o", "%N %C"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "node01 3/1/0/4", "node02 3/1/0/4", "node03 0/4/0/4", "node04 0/0/4/4"]


def test_sinfo_nel_lists_each_node_long(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nodes", "-Nel"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:4] == ["NODELIST", "NODES", "PARTITION", "STATE"]
    assert [line.split()[0] for line in lines[2:]] == ["node01", "node02", "node03", "node04"]
