"""``scontrol top JOB_LIST`` (Slurm's job_set_top): the jobs named take the highest priorities
of their owner's matching pending jobs, by nice changes. It was no verb (the usage line, exit 2)
(found 2026-12-07)."""

from __future__ import annotations

from typing import Any

import pytest

from cli import slurm_cmds, top_cmd
from cli.main import main
from cli.top_cmd import Ranked, top_nices


def test_the_named_jobs_take_the_highest_priorities_the_others_shift_down() -> None:
    """12 (priority 100) goes first: it takes 300 (nice -200), 10 takes 200, 11 takes 100;
    their sum stays."""
    nices = top_nices([Ranked("12", 100, 0)], [Ranked("10", 300, 0), Ranked("11", 200, 5)])
    assert nices == {"12": -200, "10": 100, "11": 105}


def test_several_named_jobs_keep_their_order_and_ties_step_down() -> None:
    assert top_nices([Ranked("3", 50, 0), Ranked("2", 50, 0)], [Ranked("1", 50, 0)]) == {
        "2": 1, "1": 2}
    assert top_nices([Ranked("5", 10, 0)], []) == {}  # alone: nothing to change


def _rows(*rows: tuple[int, str]) -> list[dict[str, Any]]:
    return [{"job_id": i, "job_sluid": f"s{i}", "user": "alice", "partition": part,
             "account": "", "qos": ""} for i, part in rows]


class _Client:
    def __init__(self, settings: object) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        if path == "/v1/config":
            return {"config": {"cluster": {"privileged": []}}}
        return {"jobs": [*_rows((10, "a"), (11, "a"), (12, "a"), (13, "b"), (14, "a,b"), (15, "a")),
                         {**_rows((16, "a"))[0], "reason": "JobHeldUser"}]}

    def plan_priorities(self, wait_s: float) -> dict[str, Any]:
        del wait_s
        jobs = [{"job_id": i, "priority": p, "nice": 0}
                for i, p in ((10, 300), (11, 200), (12, 100), (13, 900), (14, 800))]
        return {"priorities": {"shards": {"0": {"jobs": jobs}}, "complete": True}}

    def job(self, ref: str) -> dict[str, Any]:
        if ref == "9":
            return {"job_id": 9, "state": "COMPLETED"}
        raise top_cmd_error(ref)


def top_cmd_error(ref: str) -> Exception:
    from cli.client import NoSuchJobError

    return NoSuchJobError(f"no job {ref}")


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []
    monkeypatch.setattr(slurm_cmds, "_sluice", lambda argv: calls.append(argv) or 0)
    monkeypatch.setattr("cli.client.Client", _Client)
    monkeypatch.setattr(top_cmd.os, "getuid", lambda: 0)  # root may
    return calls


def test_scontrol_top_sends_the_nice_changes_of_the_owners_jobs_of_that_partition(
        sent: list[list[str]]) -> None:
    """13 (partition b) and 14 (a,b) are not 12's peers: untouched."""
    assert main(["scontrol", "top", "12"]) == 0
    assert sorted(sent) == [["update", "job", "10", "Nice=100"],
                            ["update", "job", "11", "Nice=100"],
                            ["update", "job", "12", "Nice=-200"]]


@pytest.mark.parametrize(("ref", "words"), [
    ("9", "Job is no longer pending execution"),
    ("99", "Invalid job id specified"),
    ("14", "Requested partition configuration not available now"),
    ("16", "Job is in held state, pending scheduler release"),
])
def test_what_top_refuses_changes_nothing(ref: str, words: str, sent: list[list[str]],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scontrol", "top", ref]) == 1
    assert capsys.readouterr().err.strip() == f"slurm_top_job error: {words}"
    assert sent == []


def test_only_an_operator_may(sent: list[list[str]], monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(top_cmd.os, "getuid", lambda: 1000)
    assert main(["scontrol", "top", "12"]) == 1
    assert "slurm_top_job error: Access/permission denied" in capsys.readouterr().err
    assert sent == []
