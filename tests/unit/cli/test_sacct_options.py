"""sacct's ``-b/--brief``, ``-l/--long``, ``-e/--helpformat``, ``--name``, ``-r/--partition``,
``-A/--accounts`` and ``-L/--allclusters``. Before, each was a usage error (exit 2): ``sacct -b``,
the quick look at a day's jobs, did not run (found 2026-12-07)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from cli import history_cmd
from cli.main import main

NOW = int(time.time() * 1000)


def _job(job_id: int, name: str, partition: str, account: str) -> dict[str, Any]:
    return {"job_id": job_id, "job_sluid": f"s{job_id}", "name": name, "user": "root",
            "partition": partition, "account": account, "state": "COMPLETED",
            "submit_ms": NOW - 60_000, "start_ms": NOW - 50_000, "end_ms": NOW - 40_000,
            "nodes": ["node01"], "runs": [], "exit_code": 0}


class _Views:
    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        del path
        return {"jobs": [_job(1, "train", "gpu", "ml"), _job(2, "prep", "main", "ml"),
                         _job(3, "train", "main", "bio")]}


@pytest.fixture(autouse=True)
def _views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_cmd, "Client", _Views)


def _out(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(["history", "-X", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_brief_is_jobid_state_exitcode(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _out(capsys, "-b")
    assert lines[0].split() == ["JobID", "State", "ExitCode"]
    assert lines[2].split() == ["1", "COMPLETED", "0:0"]


def test_long_prints_saccts_long_fields(capsys: pytest.CaptureFixture[str]) -> None:
    header = _out(capsys, "-l", "-P")[0].split("|")
    assert header[:4] == ["JobID", "JobIDRaw", "JobName", "Partition"]
    assert "MaxRSS" in header and header[-1] == "TRESUsageOutTot"


def test_name_partition_and_account_lists_select_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    def ids(*argv: str) -> list[str]:
        return [line.split("|")[0] for line in _out(capsys, "-n", "-P", "-o", "JobID", *argv)]

    assert ids("--name", "train") == ["1", "3"]
    assert ids("--name=train", "-r", "main") == ["3"]
    assert ids("-A", "ml,other") == ["1", "2"]
    assert ids("-L") == ["1", "2", "3"]


def test_helpformat_lists_the_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "-e"]) == 0
    names = capsys.readouterr().out.split()
    assert {"JobID", "State", "ExitCode", "MaxRSS", "AllocTRES"} <= set(names)
