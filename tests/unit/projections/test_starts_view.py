"""``squeue --start`` in the views: each shard's ``StartsPlanned`` kept by request, a reuse
resolved to the plan it names, the decision complete once every shard answered."""

from __future__ import annotations

from typing import Any

from projections.starts_view import StartsView, starts_answer


def _fact(shard: str, event: str, request: str, **more: Any) -> dict[str, Any]:
    return {"event_sluid": event, "shard": shard, "shard_seq": 1, "time_ms": 1_000,
            "request_sluid": request, "nonce": 5, "user": "alice", "reuses": "", "pending": 2,
            "job_sluids": [], "job_ids": [], "starts_ms": [], "nodes": [], **more}


def test_answers_are_complete_once_every_shard_answered_and_reuses_resolve() -> None:
    view = StartsView()
    view.fold(_fact("c-0", "e1", "r1", job_sluids=["j1"], job_ids=[7], starts_ms=[9_000],
                    nodes=["n[1-2]"]))
    first = starts_answer(view, "r1", 5, ("c-0", "c-1"))
    assert first is not None and first["complete"] is False
    view.fold(_fact("c-1", "e2", "r1"))
    done = starts_answer(view, "r1", 5, ("c-0", "c-1"))
    assert done is not None and done["complete"] is True
    assert list(done["shards"]["c-0"]["jobs"]) == [
        {"job_sluid": "j1", "job_id": 7, "start_ms": 9_000, "nodes": "n[1-2]"}]
    view.fold(_fact("c-0", "e3", "r2", reuses="e1", time_ms=4_000))
    reused = starts_answer(view, "r2", 5, ("c-0",))
    assert reused is not None
    answer = reused["shards"]["c-0"]
    assert (answer["planned_ms"], answer["decided_ms"], answer["plan_missing"]) == (
        1_000, 4_000, False)
    assert answer["jobs"][0]["job_id"] == 7
    assert starts_answer(view, "r2", 6, ("c-0",)) is None  # another client's nonce


def test_a_reuse_of_a_plan_the_views_do_not_hold_has_no_jobs() -> None:
    view = StartsView()
    view.fold(_fact("c-0", "e9", "r1", reuses="gone"))
    answer = starts_answer(view, "r1", 0, ())
    assert answer is not None and answer["complete"] is True
    assert (list(answer["shards"]["c-0"]["jobs"]), answer["shards"]["c-0"]["plan_missing"]) == (
        [], True)


def test_a_flood_of_requests_costs_the_views_no_copy_of_the_plan_each() -> None:
    """Any user may send ``PlanStarts`` as fast as they like; each is answered by a reuse of the
    shard's last plan. The views keep the last 10,000 answers: each must cost them a few
    hundred bytes, not a copy of a plan of 1,000 jobs (8 KB of pointers and more)."""
    import tracemalloc

    view = StartsView()
    jobs = 1_000
    view.fold(_fact("c-0", "e0", "r0", job_sluids=[f"j{i}" for i in range(jobs)],
                    job_ids=list(range(jobs)), starts_ms=[1] * jobs, nodes=["n1"] * jobs))
    requests = 2_000
    facts = [_fact("c-0", f"e{i}", f"r{i}", reuses="e0") for i in range(1, requests + 1)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for fact in facts:
        view.fold(fact)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    answer = starts_answer(view, f"r{requests}", 5, ("c-0",))
    assert answer is not None and len(answer["shards"]["c-0"]["jobs"]) == jobs
    assert grown / requests < 2_000, f"{grown / requests:.0f} bytes per answer"
