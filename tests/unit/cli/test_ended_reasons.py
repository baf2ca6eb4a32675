"""An ended job's Reason is Slurm's word for how it ended (``job_state_reason.c``), in
scontrol, squeue and sacct; the free text the views keep (a kill's reason, a launch failure's
sentence) follows scontrol's record as ``ReasonDetail=``. Before, scontrol printed
``Reason=TIMEOUT``, ``Reason=None`` for a failed job, and sentences with spaces that broke its
``Key=Value`` words (found 2026-12-07)."""

from __future__ import annotations

from typing import Any

import pytest

from cli.job_fields import job_values
from cli.show_cmd import job_lines
from projections.job_states import shown_reason


@pytest.mark.parametrize(("state", "reason", "signal", "word"), [
    ("TIMEOUT", "TIMEOUT", 9, "TimeLimit"),
    ("FAILED", "", 0, "NonZeroExitCode"),
    ("FAILED", "", 9, "RaisedSignal"),
    ("FAILED", "launch failed as alice: output file /x: Permission denied", 0,
     "JobLaunchFailure"),
    ("NODE_FAIL", "Run missing from node n01", 9, "NodeDown"),
    ("NODE_FAIL", "partition b was removed from the configuration", 1, "PartitionDown"),
    ("OUT_OF_MEMORY", "", 9, "OutOfMemory"),
    ("COMPLETED", "", 0, "None"),
    ("CANCELLED", "CANCELLED by alice", 15, "None"),
    ("PENDING", "Resources", 0, "Resources"),
    ("PENDING", "", 0, "None"),
    ("RUNNING", "None", 0, "None"),
])
def test_the_reason_shown(state: str, reason: str, signal: int, word: str) -> None:
    assert shown_reason(state, reason, signal) == word


def _row(**fields: Any) -> dict[str, Any]:
    return {"job_id": 7, "job_sluid": "s1", "state": "NODE_FAIL", "reason": fields.pop(
        "reason", "Run missing from node n01 (its heartbeats)"), "signal": 9, "user": "alice",
        "submit_ms": 1, "start_ms": 2, "end_ms": 3, "nodes": ["n01"], "flags": [], **fields}


def test_scontrol_shows_the_word_then_the_words() -> None:
    text = "\n".join(job_lines(_row(), 10_000, "7"))
    assert "JobState=NODE_FAIL Reason=NodeDown Dependency=(null)" in text
    assert "   ReasonDetail=Run missing from node n01 (its heartbeats)" in text


def test_no_detail_line_when_the_word_says_it_all() -> None:
    text = "\n".join(job_lines(_row(state="PENDING", reason="Priority", end_ms=0), 10, "7"))
    assert "Reason=Priority" in text and "ReasonDetail" not in text


def test_squeue_and_sacct_show_the_word() -> None:
    values = job_values(_row(), 10_000, {})
    assert (values["reason"], values["reason_list"]) == ("NodeDown", "(NodeDown)")


def test_hold_or_release_of_an_ended_job_is_refused_without_asking_the_shard(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The shard refuses an ended job it still holds (JobFinished); one it purged after
    MinJobAge it no longer knows and leaves unanswered: the command said nothing, exit 0."""
    from cli import submit
    from cli.main import main

    sent: list[str] = []

    class Views:
        def __init__(self, settings: Any) -> None:
            del settings

        def job(self, ref: str) -> dict[str, Any]:
            state = "COMPLETED" if ref == "1" else "PENDING"
            return {"job_sluid": f"s{ref}", "job_id": int(ref), "state": state}

    monkeypatch.setattr(submit, "Client", Views)
    monkeypatch.setattr(submit, "decided", lambda client, verb, ref, *rest, **watch:
                        sent.append(ref) or True)
    monkeypatch.setattr(submit, "admin_hold", lambda *args: False)
    assert main(["hold", "1", "2"]) == 1
    assert main(["release", "1"]) == 1
    assert sent == ["2"]
    err = capsys.readouterr().err
    assert "Job has already finished for job 1 (JobFinished: job is COMPLETED)" in err
