"""squeue and sinfo refuse what names nothing, as Slurm's do (exit 1): ``squeue -j abc``
(``Invalid job id: abc``), ``squeue -j 99999`` of one job the system does not know
(``slurm_load_jobs error: Invalid job id specified``; with several ids squeue lists what it
finds), ``sinfo -t bogus`` (``Bad state string``, then the valid states)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from cli import nodes_cmd, queue_cmd
from cli.client import ApiError
from cli.main import main
from cli.sinfo_states import parse_states

JOBS = [{"job_id": 7, "job_sluid": "s7", "state": "RUNNING", "start_ms": 1, "user": "alice",
         "nodes": ["node01"], "partition": "main", "name": "a", "time_limit_s": 60}]
ENDED = {**JOBS[0], "job_id": 5, "job_sluid": "s5", "state": "COMPLETED"}


class _Views:
    asked: ClassVar[list[str]] = []

    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        self.asked.append(path)
        if path.startswith("/v1/jobs"):
            return {"jobs": JOBS}
        if path == "/v1/config":
            return {"config": {}}
        return {"nodes": [{"name": "node01", "state": "IDLE", "partitions": ["main"]},
                          {"name": "node02", "state": "DOWN", "partitions": ["main"]}]}

    def job(self, ref: str) -> dict[str, Any]:
        if ref == "5":  # ended: squeue shows nothing of it, but knows it
            return ENDED
        raise ApiError(f"no job {ref}")


@pytest.fixture
def views(monkeypatch: pytest.MonkeyPatch) -> type[_Views]:
    monkeypatch.setattr(queue_cmd, "Client", _Views)
    monkeypatch.setattr(nodes_cmd, "Client", _Views)
    _Views.asked = []
    return _Views


@pytest.mark.parametrize("jobs", ["abc", "7,abc", "12_x"])
def test_a_malformed_job_id_is_refused_before_asking(
        jobs: str, views: type[_Views], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["queue", "-j", jobs]) == 1
    out = capsys.readouterr()
    assert out.out == "" and "Invalid job id: " in out.err and views.asked == []


def test_one_unknown_job_id_is_slurms_error(capsys: pytest.CaptureFixture[str],
                                            views: type[_Views]) -> None:
    del views
    assert main(["queue", "-j", "99999"]) == 1
    out = capsys.readouterr()
    assert (out.out, out.err) == ("", "slurm_load_jobs error: Invalid job id specified\n")


@pytest.mark.parametrize("jobs", ["5", "7", "99998,99999", "7,99999"])
def test_a_known_job_or_several_ids_list_what_is_found(
        jobs: str, views: type[_Views], capsys: pytest.CaptureFixture[str]) -> None:
    del views
    assert main(["queue", "-h", "-j", jobs, "-o", "%i"]) == 0
    shown = capsys.readouterr().out.split()
    assert shown == (["7"] if "7" in jobs.split(",") else [])


def test_an_unknown_node_state_is_refused(views: type[_Views],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nodes", "-t", "bogus"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == 'sluice nodes: error: Bad state string: "bogus"'
    assert err[1].startswith("sluice nodes: error: valid states: unknown,down,idle,allocated")
    assert views.asked == []


def test_states_are_prefixes_negations_and_all(views: type[_Views],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    del views
    for states, nodes in [("id", ["node01"]), ("~idle", ["node02"]), ("all", ["node01",
                          "node02"]), ("DOWN,idle", ["node01", "node02"]), ("alloc", [])]:
        assert main(["nodes", "-N", "-h", "-t", states, "-o", "%N"]) == 0
        assert capsys.readouterr().out.split() == nodes, states
    assert parse_states("") is None
