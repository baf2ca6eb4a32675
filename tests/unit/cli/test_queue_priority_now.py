"""squeue ``%Q``/``%p`` (``-O Priority``) print a pending job's priority now, as slurmctld's:
the views keep the priority of the job's last ``JobPending`` (its reason's last change), which
the age factor had long outgrown (seen: 1 for every pending job while sprio said 10562 and
7035) (found 2026-12-07)."""

from __future__ import annotations

from typing import Any

from cli.client import ApiError, Client
from cli.queue_starts import with_priorities
from streams.settings import Settings

ROWS = [{"job_sluid": "s1", "state": "PENDING", "priority": 1},
        {"job_sluid": "s2", "state": "RUNNING", "priority": 5},
        {"job_sluid": "s3", "state": "PENDING", "priority": 0}]  # held: sprio lists it not


class _Answers(Client):
    def __init__(self, answer: Any) -> None:
        super().__init__(Settings(auth="none", relay=False, cluster_id=3))
        self.answer = answer

    def plan_priorities(self, wait_s: float) -> dict[str, Any] | None:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer  # type: ignore[no-any-return]


def test_pending_rows_take_the_shards_priorities_now() -> None:
    answer = {"priorities": {"complete": True, "shards": {"c-0": {"jobs": [
        {"job_sluid": "s1", "job_id": 1, "priority": 10562},
        {"job_sluid": "s2", "job_id": 2, "priority": 99}]}}}}
    rows, warning = with_priorities(_Answers(answer), ROWS, 1.0)
    assert [r["priority"] for r in rows] == [10562, 5, 0] and warning == ""


def test_no_answer_keeps_the_rows_and_says_why() -> None:
    for answer in (None, ApiError("the relay refused it")):
        rows, warning = with_priorities(_Answers(answer), ROWS, 1.0)
        assert rows == ROWS and "PRIORITY shows the last one recorded" in warning


def test_a_held_job_keeps_priority_0_even_when_the_shards_rank_it() -> None:
    """The shards ranked a job held by its deleted reservation (squeue RD) at 1; Slurm's held
    job has priority 0 (tests/e2e/test_reservations.py saw '%Q' print 1)."""
    held = [{"job_sluid": "s4", "state": "PENDING", "priority": 0, "reason": reason,
             "flags": flags}
            for reason, flags in (("ReservationDeleted", ["RESV_DEL_HOLD"]),
                                  ("JobHeldUser", []), ("JobHeldAdmin", []))]
    answer = {"priorities": {"complete": True, "shards": {"c-0": {"jobs": [
        {"job_sluid": "s4", "job_id": 4, "priority": 1}]}}}}
    rows, _warning = with_priorities(_Answers(answer), held, 1.0)
    assert [r["priority"] for r in rows] == [0, 0, 0]
