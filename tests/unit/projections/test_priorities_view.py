"""``sprio`` in the views: the shards' ``PrioritiesComputed`` kept by request, reuses resolved."""

from __future__ import annotations

from projections.priorities_view import PrioritiesView, priorities_answer


def _fact(event: str, request: str, shard: str, reuses: str = "", nonce: int = 1,
          jobs: int = 0) -> dict[str, object]:
    return {"event_sluid": event, "request_sluid": request, "shard": shard, "nonce": nonce,
            "user": "alice", "time_ms": 5, "reuses": reuses, "weights": {"age": 1000},
            "job_sluids": [f"s{i}" for i in range(jobs)], "job_ids": list(range(1, jobs + 1)),
            "priorities": [10] * jobs, "age": [10] * jobs, "fairshare": [0] * jobs,
            "jobsize": [0] * jobs, "partition": [0] * jobs, "qos": [0] * jobs,
            "nice": [0] * jobs, "admin_priorities": [0] * jobs}


def test_an_answer_is_complete_once_every_shard_answered_and_a_reuse_shares_the_jobs() -> None:
    view = PrioritiesView()
    view.fold(_fact("e1", "r1", "shard-0", jobs=2))
    assert priorities_answer(view, "r1", 1, ("shard-0", "shard-1"))["complete"] is False
    view.fold(_fact("e2", "r1", "shard-1", jobs=1))
    answer = priorities_answer(view, "r1", 1, ("shard-0", "shard-1"))
    assert answer["complete"] is True
    assert [j["job_id"] for j in answer["shards"]["shard-0"]["jobs"]] == [1, 2]
    assert answer["shards"]["shard-0"]["jobs"][0]["priority"] == 10
    view.fold(_fact("e3", "r2", "shard-0", reuses="e1"))
    again = priorities_answer(view, "r2", 1, ("shard-0",))
    assert again["shards"]["shard-0"]["jobs"] is answer["shards"]["shard-0"]["jobs"]
    assert priorities_answer(view, "r2", 99, ("shard-0",)) is None  # another client's nonce


def test_a_reuse_of_an_answer_the_views_no_longer_hold_says_so() -> None:
    view = PrioritiesView()
    view.fold(_fact("e9", "r1", "shard-0", reuses="gone"))
    answer = priorities_answer(view, "r1", 1, ())
    assert answer["shards"]["shard-0"]["missing"] is True
    assert answer["shards"]["shard-0"]["jobs"] == ()
