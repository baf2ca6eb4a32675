"""``sprio`` in the views: the shards' ``PrioritiesComputed`` answers, kept apart from jobs.

Each shard answers a ``PlanPriorities`` with one ``PrioritiesComputed``: its jobs' priority
factors, or the reuse of its answer of less than 10 s before, kept as
:mod:`projections.shard_answers` keeps every such answer (the last :data:`ANSWERS_KEPT` full
answers; a reuse whose answer the views no longer hold is answered with no jobs and
``missing``). ``GET /v1/decisions`` answers a ``PlanPriorities``'s SLUID with ``{"priorities":
{"shards": {shard: answer}, "complete": bool}}``.
"""

from __future__ import annotations

from projections.shard_answers import REQUESTS_KEPT, Row, ShardAnswers, parallel_rows

__all__ = ["ANSWERS_KEPT", "COLUMNS", "REQUESTS_KEPT", "PrioritiesView", "priorities_answer"]

ANSWERS_KEPT = 64
"""The most full answers (``PrioritiesComputed`` with jobs) the views keep, newest last."""
COLUMNS = {"job_sluids": "job_sluid", "job_ids": "job_id", "priorities": "priority",
           "age": "age", "fairshare": "fairshare", "jobsize": "jobsize",
           "partition": "partition_factor", "qos": "qos", "nice": "nice",
           "admin_priorities": "admin_priority"}
"""The fact's parallel lists (one entry per job) → the key of each job's answer row."""


class PrioritiesView(ShardAnswers):
    """The shards' ``PrioritiesComputed`` answers."""

    __slots__ = ()
    FULL_KEPT = ANSWERS_KEPT

    def full_of(self, r: Row) -> Row:
        return {
            "time_ms": r.get("time_ms", 0),
            "jobs": parallel_rows(r, COLUMNS),
        }

    def answer_of(self, r: Row, full: Row | None) -> Row:
        return {
            "computed_ms": full["time_ms"] if full else 0,
            "weights": dict(r.get("weights") or {}),
            "jobs": full["jobs"] if full else (),
            "missing": full is None,
        }


def priorities_answer(view: ShardAnswers, sluid: str, nonce: int,
                      shards: tuple[str, ...]) -> Row | None:
    """The decision about a ``PlanPriorities`` (:meth:`ShardAnswers.answer`)."""
    return view.answer(sluid, nonce, shards)
