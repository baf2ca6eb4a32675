"""``sluice queue --start``: the shards' answers joined to the pending rows; no answer, a
refusal or a missing shard falls back to N/A with one line saying why, never a traceback."""

from __future__ import annotations

from typing import Any

from cli.client import ApiError, Client
from cli.job_fields import job_values
from cli.queue_starts import planned_starts, with_plans
from streams.settings import Settings

ROW = {"job_sluid": "s1", "job_id": 7, "state": "PENDING", "start_ms": 0, "reason": "Resources"}


class _Answers(Client):
    """A client whose plan_starts answers ``answer`` (or raises it)."""

    def __init__(self, answer: Any) -> None:
        super().__init__(Settings(auth="none", relay=False, cluster_id=3))
        self.answer = answer

    def plan_starts(self, wait_s: float) -> dict[str, Any] | None:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer  # type: ignore[no-any-return]


def _shard(jobs: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"shard": "c", "jobs": jobs, "plan_missing": False, **more}


def test_the_plans_of_every_shard_fill_the_pending_rows() -> None:
    answer = {"starts": {"complete": True, "shards": {
        "c-0": _shard([{"job_sluid": "s1", "job_id": 7, "start_ms": 2_000, "nodes": "n[1-2]"}]),
        "c-1": _shard([{"job_sluid": "s2", "job_id": 8, "start_ms": 9_000, "nodes": "g1"}]),
    }}}
    plans, warning = planned_starts(_Answers(answer), 1.0)
    assert (plans, warning) == ({"s1": (2_000, "n[1-2]"), "s2": (9_000, "g1")}, "")
    rows = with_plans([ROW, {**ROW, "job_sluid": "s3", "job_id": 9},
                       {**ROW, "state": "RUNNING", "job_sluid": "s2"}], plans)
    assert [(r.get("planned_start_ms"), r.get("sched_nodes")) for r in rows] == [
        (2_000, "n[1-2]"), (0, ""), (None, None)]
    shown = job_values(rows[1], 0, {})
    assert (shown["start"], shown["sched_nodes"]) == ("N/A", "(null)")
    assert job_values(rows[0], 0, {})["sched_nodes"] == "n[1-2]"


def test_no_answer_says_so_and_shows_na() -> None:
    plans, warning = planned_starts(_Answers(None), 10.0)
    assert plans == {}
    assert "no planned starts within 10 s" in warning and "older release" in warning
    assert warning.endswith("START_TIME shows N/A")


def test_a_request_that_could_not_be_sent_or_was_refused_shows_na() -> None:
    plans, warning = planned_starts(_Answers(ApiError("the relay refused it")), 1.0)
    assert plans == {} and "the relay refused it" in warning
    denial = {"denial": {"reason": "Unauthenticated", "detail": "a credential is required"}}
    plans, warning = planned_starts(_Answers(denial), 1.0)
    assert plans == {} and "Unauthenticated: a credential is required" in warning


def test_a_shard_that_did_not_answer_is_named() -> None:
    answer = {"starts": {"complete": False, "shards": {
        "c-1": _shard([{"job_sluid": "s2", "job_id": 8, "start_ms": 9_000, "nodes": "g1"}])}}}
    plans, warning = planned_starts(_Answers(answer), 2.0)
    assert plans == {"s2": (9_000, "g1")}
    assert "answered: c-1" in warning and "N/A" in warning
