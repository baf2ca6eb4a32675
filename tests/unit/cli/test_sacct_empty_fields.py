"""sacct's ``Comment`` and ``Constraints`` of a job that has none print nothing (slurm's
``print_fields_str`` prints a NULL or empty string as blank), not squeue's ``(null)``; a step
line has neither (sacct's print.c takes them from the job record alone). Sluice printed
``(null)`` (found 2026-12-07)."""

from __future__ import annotations

from typing import Any

import pytest

from cli import history_cmd
from cli.main import main

SUBMIT = 1_796_000_000_000
RUN = {"run_sluid": "r1", "state": "COMPLETED", "start_ms": SUBMIT + 1000,
       "end_ms": SUBMIT + 2000, "exit_code": 0, "signal": 0, "nodes": ["node01"]}
PLAIN = {"job_id": 12, "job_sluid": "s12", "state": "COMPLETED", "user": "alice", "name": "j",
         "partition": "main", "submit_ms": SUBMIT, "start_ms": SUBMIT + 1000,
         "end_ms": SUBMIT + 2000, "exit_code": 0, "signal": 0, "nodes": ["node01"],
         "run_sluid": "r1", "runs": [RUN], "steps": []}
SAID = {**PLAIN, "job_id": 13, "job_sluid": "s13", "comment": "hello", "constraint": "fast"}


class _Views:
    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        del path
        return {"jobs": [PLAIN, SAID]}


def test_empty_comment_and_constraints_print_nothing(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(history_cmd, "Client", _Views)
    assert main(["history", "-j", "12,13", "-P", "-n", "-o", "JobID,Comment,Constraints"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "12||", "12.batch||", "13|hello|fast", "13.batch||"]
