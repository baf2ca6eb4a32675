"""squeue's ``%e`` (END_TIME): a running job's start plus its time limit, as slurmctld sets its
end time at the start (it printed N/A), ``NONE`` without a limit; N/A before the start."""

from __future__ import annotations

from typing import Any

from cli.job_fields import job_values

START = 1_796_000_000_000


def _end(**row: Any) -> str:
    job = {"job_id": 3, "state": "RUNNING", "start_ms": START, "time_limit_s": 3600, **row}
    return job_values(job, START + 60_000, {})["end"]


def test_a_running_jobs_end_is_its_start_plus_its_limit(utc: None) -> None:
    del utc
    assert _end() == "2026-11-30T01:53:20"
    assert _end(time_limit_s=0) == "NONE"
    assert _end(state="PENDING", start_ms=0) == "N/A"
    assert _end(state="COMPLETED", end_ms=START + 5000) == "2026-11-30T00:53:25"
