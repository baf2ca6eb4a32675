"""``sluice show job`` and ``sluice audit`` say ``dead-lettered: REASON at TIME`` of a request the
intake could not read (it never reached the ledger); ``sluice show job`` of a rejected job
shows its detail; the CLI takes a ``dead_letter`` decision for a refusal."""

from __future__ import annotations

import io
from typing import Any, ClassVar

import pytest

from cli import audit, views
from cli.client import ApiError, Decision
from cli.formats import slurm_time
from cli.main import main
from cli.show_cmd import job_lines
from schemas import SluidGenerator
from streams.settings import Settings

SLUID = SluidGenerator(2).new()
WHEN = 1_765_000_000_000
LETTER = {"reason": "Undecodable", "time_ms": WHEN, "offset": 3}
DENIED = SluidGenerator(2).new()


class _Client:
    jobs: ClassVar[dict[str, dict[str, Any]]] = {}

    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str, **_: Any) -> dict[str, Any]:
        if path == f"/v1/dead-letters/{SLUID}":
            return {"dead_letters": [LETTER]}
        if path.startswith("/v1/dead-letters/"):
            return {"dead_letters": []}
        if path == f"/v1/denials/{DENIED}":
            return {"denials": [{"request": "SubmitJob", "reason": "Unauthenticated",
                                 "detail": "a credential is required", "time_ms": WHEN}]}
        if path.startswith("/v1/denials/"):
            return {"denials": []}
        if path.startswith("/v1/jobs/") and path[9:] in self.jobs:
            return {"job": self.jobs[path[9:]]}
        raise ApiError(f"no job {path.rpartition('/')[2]}")


@pytest.fixture(autouse=True)
def _client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "Client", _Client)
    monkeypatch.setattr(audit, "Client", _Client)


def test_show_job_of_a_dead_lettered_request_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "job", SLUID]) == 1
    err = capsys.readouterr().err
    assert f"dead-lettered: Undecodable at {slurm_time(WHEN)}" in err
    other = SluidGenerator(2).new()
    assert main(["show", "job", other]) == 1
    assert "dead-lettered" not in capsys.readouterr().err


def test_show_job_of_a_job_lists_the_dead_letters_under_its_sluid(
        capsys: pytest.CaptureFixture[str]) -> None:
    _Client.jobs = {SLUID: {"job_id": 4, "job_sluid": SLUID, "state": "PENDING",
                            "reason": "Priority", "user": "alice"}}
    try:
        assert main(["show", "job", SLUID]) == 0
    finally:
        _Client.jobs = {}
    assert f"   DeadLettered=Undecodable@{slurm_time(WHEN)}" in capsys.readouterr().out


def test_audit_of_a_dead_lettered_request_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit, "read_facts", lambda settings: [])
    out = io.StringIO()
    assert audit.run(["audit", SLUID], out, Settings()) == 0
    assert out.getvalue().splitlines() == [
        f"# {SLUID}: not in the ledger (the intake could not read the request)",
        f"dead-lettered: Undecodable at {slurm_time(WHEN)}",
    ]
    assert audit.run(["audit", SluidGenerator(2).new()], io.StringIO(), Settings()) == 1


def test_a_rejected_jobs_detail_is_shown() -> None:
    row = {"job_id": 0, "job_sluid": SLUID, "state": "REJECTED", "reason": "KeyMismatch",
           "detail": "the key is not the job_sluid", "user": ""}
    lines = job_lines(row, WHEN, "0")
    assert "   ReasonDetail=the key is not the job_sluid" in lines


def test_a_dead_letter_decision_is_a_refusal() -> None:
    decision = Decision.from_answer(SLUID, {"dead_letter": {**LETTER, "detail": "Undecodable: x"}})
    assert (decision.state, decision.reason) == ("DENIED", "Undecodable")
    assert "dead-lettered" in decision.detail


def test_a_reader_without_the_detail_sees_what_the_code_means() -> None:
    """A user shown only the code (``Undecodable``) is told what it means, in Sluice's words
    (``projections.dead_letter_index.MEANINGS``); it said the bare code."""
    from cli.dead_letters_shown import letter_line

    letter = {**LETTER, "meaning": "the value is not a Sluice record"}
    assert letter_line(letter).endswith("(the value is not a Sluice record)")
    decision = Decision.from_answer(SLUID, {"dead_letter": letter})
    assert decision.detail == "dead-lettered by the intake: the value is not a Sluice record"


def test_a_letters_words_reach_no_terminal_as_escapes() -> None:
    """A letter's error is its sender's text (in PLAINTEXT mode anyone can write the dead
    letters topic): an operator's ``sluice audit`` shows it without control characters."""
    from cli.dead_letters_shown import dead_letter_field, letter_line

    hostile = {"reason": "Undecodable", "time_ms": WHEN,
               "detail": "Undecodable: x\x1b]0;owned\x07\x1b[2J\nroot"}
    assert "\x1b" not in letter_line(hostile) and "\n" not in letter_line(hostile)
    assert "\x1b" not in dead_letter_field({**hostile, "reason": "a\x1b[2J"})


def test_an_audit_by_sluid_names_the_job_by_its_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sluice audit SLUID`` said ``# job SLUID (SLUID)``; by id it said ``# job 1 (SLUID)``,
    as the docs show: both now name the job id it was queued as."""
    from projections.replay import Fact
    from tests.unit.projections.ledger_builder import LedgerBuilder

    builder = LedgerBuilder()
    builder.node("n1")
    job = builder.queued()
    facts = [Fact(name, record, 0, i) for i, (name, record) in enumerate(builder.facts)]
    monkeypatch.setattr(audit, "read_facts", lambda settings: facts)
    for ref in (job, "1"):
        out = io.StringIO()
        assert audit.run(["audit", ref], out, Settings()) == 0
        assert out.getvalue().splitlines()[0] == f"# job 1 ({job}): 1 facts"
    denied = builder.sluid()
    builder.fact("RequestDenied", subject_sluid=denied, request="SubmitJob", requester="",
                 reason="Unauthenticated", detail="a credential is required", nonce=0)
    facts = [Fact(name, record, 0, i) for i, (name, record) in enumerate(builder.facts)]
    out = io.StringIO()
    assert audit.run(["audit", denied], out, Settings()) == 0
    assert out.getvalue().splitlines()[0] == f"# {denied}: 1 facts"  # never a job: no id


def test_show_job_of_a_refused_submission_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    """A submission refused for its credential (``RequestDenied``) never became a job:
    ``sluice show job SLUID`` said only ``no job`` (a kcat user without ``SLUICE_JWT``)."""
    assert main(["show", "job", DENIED]) == 1
    err = capsys.readouterr().err
    assert (f"sluice show: {DENIED}: refused: SubmitJob Unauthenticated at {slurm_time(WHEN)} "
            "(a credential is required)") in err
