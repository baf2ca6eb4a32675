"""``sluice submit --test-only`` / ``sbatch --test-only``: the shard's answer read and printed as
Slurm's will-run line; a refused test reads as a refused submission."""

from __future__ import annotations

from typing import Any

import pytest

from cli.client import TESTED, Client, Decision, _NotConnectedError
from cli.main import _parser
from cli.submit import will_run_line
from schemas import decode
from streams.settings import Settings

ROW = {"job_id": 57, "start_ms": 1_796_527_800_000, "nodes": "node[01-02]", "cpus": 4,
       "partition": "main", "reason": "", "detail": "", "nonce": 3}


def test_an_answer_prints_slurms_line(utc: None) -> None:
    del utc
    decision = Decision.from_answer("s1", {"test": ROW})
    assert (decision.state, decision.job_id, decision.accepted) == (TESTED, 57, True)
    assert will_run_line("sbatch", decision.row) == (
        "sbatch: Job 57 to start at 2026-12-06T03:30:00 using 4 processors on nodes "
        "node[01-02] in partition main")


def test_a_refused_test_reads_as_a_refused_submission() -> None:
    refused = {**ROW, "job_id": 0, "reason": "NodeCountTooLarge",
               "detail": "Requested node configuration is not available: 9 nodes asked"}
    decision = Decision.from_answer("s1", {"test": refused})
    assert (decision.state, decision.accepted, decision.reason) == (
        "REJECTED", False, "NodeCountTooLarge")
    assert decision.detail.startswith("Requested node configuration is not available")


def test_submit_takes_test_only_and_refuses_it_with_a_file_of_jobs(
        capsys: pytest.CaptureFixture[str]) -> None:
    args = _parser("submit").parse_args(["submit", "--test-only", "--wrap", "true"])
    assert args.test_only is True
    assert _parser("submit").parse_args(["submit", "--wrap", "true"]).test_only is False
    args = _parser("submit").parse_args(["submit", "--test-only", "--from", "jobs.txt"])
    assert args.run(args, None) == 2
    assert "--test-only tests one job" in capsys.readouterr().err


class _ApiDown(Client):
    """Kafka takes every record; the views' API never answers."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(Settings(auth="none", relay=False, cluster_id=3))
        self.sent: list[bytes] = []
        SENT.append(self)

    def _produce(self, signed: Any) -> None:
        self.sent += [value for _name, value, _key, _headers in signed]

    def connect(self) -> None:
        pass

    def _http(self, method: str, path: str, headers: dict[str, str], body: bytes | None,
              timeout_s: float) -> tuple[int, dict[str, Any]]:
        raise _NotConnectedError("the views' API at 127.0.0.1:1 does not answer")


SENT: list[_ApiDown] = []


def test_a_test_without_an_answer_says_nothing_was_submitted(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("cli.submit.Client", _ApiDown)
    monkeypatch.setattr(Client, "test_only",
                        lambda self, spec, wait_s=0.0: Client._submit_once(
                            self, spec, 0.0, "TestSubmitJob"))
    args = _parser("submit").parse_args(["submit", "--test-only", "--wrap", "true"])
    assert args.run(args, Settings(auth="none", relay=False, cluster_id=3)) == 1
    err = capsys.readouterr().err
    assert "no answer to the test" in err and "nothing was submitted" in err
    assert "sluice show job" not in err  # not a submission's advice
    [client] = SENT
    assert [decode(value)[0] for value in client.sent] == ["TestSubmitJob"]
