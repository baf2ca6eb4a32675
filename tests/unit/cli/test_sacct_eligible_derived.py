"""sacct's ``Eligible`` (the ``--begin`` time when later than the submission; a step's start)
and ``DerivedExitCode`` (the highest exit of the run's srun steps, the batch step left out;
empty on a step line), as Slurm's sacct prints them."""

from __future__ import annotations

from typing import Any

import pytest

from cli import history_cmd
from cli.main import main

SUBMIT = 1_796_000_000_000
JOB = {"job_id": 12, "job_sluid": "s12", "state": "FAILED", "user": "alice", "name": "j",
       "partition": "main", "submit_ms": SUBMIT, "begin_ms": SUBMIT + 7_200_000,
       "start_ms": SUBMIT + 7_300_000, "end_ms": SUBMIT + 7_400_000, "exit_code": 1,
       "signal": 0, "nodes": ["node01"], "run_sluid": "r1",
       "runs": [{"run_sluid": "r1", "state": "FAILED", "start_ms": SUBMIT + 7_300_000,
                 "end_ms": SUBMIT + 7_400_000, "exit_code": 1, "signal": 0,
                 "nodes": ["node01"]}],
       "steps": [
           {"step_id": 0, "run_sluid": "r1", "state": "FAILED", "exit_code": 3, "signal": 0,
            "start_ms": SUBMIT + 7_310_000, "end_ms": SUBMIT + 7_320_000, "nodes": ["node01"],
            "ntasks": 1, "name": "a"},
           {"step_id": 1, "run_sluid": "r1", "state": "CANCELLED", "exit_code": 0,
            "signal": 9, "start_ms": SUBMIT + 7_330_000, "end_ms": SUBMIT + 7_340_000,
            "nodes": ["node01"], "ntasks": 1, "name": "b"},
           {"step_id": 0, "run_sluid": "r0", "state": "FAILED", "exit_code": 99, "signal": 0,
            "start_ms": SUBMIT, "end_ms": SUBMIT, "nodes": ["node01"], "ntasks": 1,
            "name": "an earlier run's"}]}


class _Views:
    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        del path
        return {"jobs": [JOB]}


def _lines(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
           fields: str) -> list[str]:
    monkeypatch.setattr(history_cmd, "Client", _Views)
    assert main(["history", "-j", "12", "-P", "-n", "-o", fields]) == 0
    return capsys.readouterr().out.splitlines()


def test_eligible_is_the_begin_time_and_a_steps_start(
        utc: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    del utc
    assert _lines(monkeypatch, capsys, "JobID,Submit,Eligible") == [
        "12|2026-11-30T00:53:20|2026-11-30T02:53:20",
        "12.batch|2026-11-30T00:53:20|2026-11-30T02:55:00",
        "12.0|2026-11-30T00:53:20|2026-11-30T02:55:10",
        "12.1|2026-11-30T00:53:20|2026-11-30T02:55:30"]


def test_derived_exit_code_is_the_highest_srun_steps_of_the_run(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert _lines(monkeypatch, capsys, "JobID,ExitCode,DerivedExitCode") == [
        "12|1:0|3:0", "12.batch|1:0|", "12.0|3:0|", "12.1|0:9|"]


def test_a_run_without_steps_derives_0_0_and_a_signal_counts_below_an_exit() -> None:
    assert history_cmd.derived_exit_code([]) == "0:0"
    assert history_cmd.derived_exit_code([{"exit_code": 0, "signal": 9}]) == "0:9"
    assert history_cmd.derived_exit_code([{"exit_code": 0, "signal": 9},
                                          {"exit_code": 2, "signal": 0}]) == "2:0"
