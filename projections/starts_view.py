"""``squeue --start`` in the views: the shards' ``StartsPlanned`` answers, kept apart from jobs.

Each shard answers a ``PlanStarts`` with one ``StartsPlanned``: its plan, or the reuse of its
plan of less than 10 s before, kept as :mod:`projections.shard_answers` keeps every such answer
(the last :data:`PLANS_KEPT` plans). ``GET /v1/decisions`` answers a ``PlanStarts``'s SLUID with
``{"starts": {"shards": {shard: answer}, "complete": bool}}`` once every shard answered
(``complete``), or at the end of the wait with the shards that did. A reuse whose plan the views
no longer hold is answered with no jobs and ``plan_missing``: the client shows N/A, as for a job
no plan covers.
"""

from __future__ import annotations

from projections.shard_answers import REQUESTS_KEPT, Row, ShardAnswers

__all__ = ["PLANS_KEPT", "REQUESTS_KEPT", "StartsView", "starts_answer"]

PLANS_KEPT = 64
"""The most plans (``StartsPlanned`` with jobs) the views keep, newest last."""


class StartsView(ShardAnswers):
    """The shards' ``StartsPlanned`` answers."""

    __slots__ = ()
    FULL_KEPT = PLANS_KEPT

    def full_of(self, r: Row) -> Row:
        return {
            "time_ms": r.get("time_ms", 0),
            "pending": r.get("pending", 0),
            "jobs": tuple(  # shared by every answer that reuses the plan: never copied
                {"job_sluid": s, "job_id": i, "start_ms": t, "nodes": n}
                for s, i, t, n in zip(r.get("job_sluids", ()), r.get("job_ids", ()),
                                      r.get("starts_ms", ()), r.get("nodes", ()), strict=False)
            ),
        }

    def answer_of(self, r: Row, full: Row | None) -> Row:
        return {
            "planned_ms": full["time_ms"] if full else 0,
            "pending": full["pending"] if full else r.get("pending", 0),
            "jobs": full["jobs"] if full else (),
            "plan_missing": full is None,
        }


def starts_answer(view: ShardAnswers, sluid: str, nonce: int,
                  shards: tuple[str, ...]) -> Row | None:
    """The decision about a ``PlanStarts`` (:meth:`ShardAnswers.answer`)."""
    return view.answer(sluid, nonce, shards)
