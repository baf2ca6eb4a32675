"""``sbatch --wait``'s exit status and line (found trying Sluice as a new user)."""

from __future__ import annotations

from typing import Any

import pytest

from cli.submit import array_wait_status, ended_line, wait_limit, wait_status


def _job(state: str, exit_code: int = 0, signal: int = 0, reason: str = "None") -> dict[str, Any]:
    return {"job_id": 9, "state": state, "exit_code": exit_code, "signal": signal,
            "reason": reason}


@pytest.mark.parametrize(("job", "status"), [
    (_job("COMPLETED"), 0),
    (_job("FAILED", 7), 7),  # sbatch(1): the exit code of the submitted job
    (_job("FAILED", 126, reason="launch refused"), 126),
    (_job("TIMEOUT", 0, 15), 1),  # a signal ended it: 1
    (_job("CANCELLED", 0, 9), 1),
    (_job("NODE_FAIL", 0, 0), 1),  # not COMPLETED, no exit code: still a failure
])
def test_wait_exits_with_the_jobs_exit_code_as_sbatch_does(job: dict[str, Any],
                                                           status: int) -> None:
    assert wait_status(job) == status


def test_the_ended_line_names_a_reason_but_not_slurms_none() -> None:
    assert ended_line(_job("FAILED", 7)) == "Job 9 ended FAILED (exit code 7)"
    assert ended_line(_job("TIMEOUT", 0, 15, "TIMEOUT")) == (
        "Job 9 ended TIMEOUT (exit code 0, signal 15): TIMEOUT")


def test_an_arrays_wait_exits_with_its_highest_task_status() -> None:
    assert array_wait_status([_job("COMPLETED"), _job("FAILED", 3), _job("FAILED", 2)]) == 3
    assert array_wait_status([_job("COMPLETED"), _job("COMPLETED")]) == 0
    assert array_wait_status([_job("COMPLETED"), _job("TIMEOUT", 0, 15)]) == 1


def test_the_ended_line_names_an_array_task_as_squeue_does() -> None:
    task = {**_job("FAILED", 3), "job_id": 5, "array_job_id": 3, "array_task_id": 3}
    assert ended_line(task) == "Job 3_3 ended FAILED (exit code 3)"


def test_wait_waits_as_long_as_the_job_runs_unless_told() -> None:
    """sbatch --wait has no limit: an hour's default gave up on a longer job with status 1."""
    from cli.main import _parser

    args = _parser("submit").parse_args(["submit", "-W", "--wrap", "true"])
    assert wait_limit(args.timeout) == float("inf")
    assert wait_limit(30.0) == 30.0
