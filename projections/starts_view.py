"""``squeue --start`` in the views: the shards' ``StartsPlanned`` answers, kept apart from jobs.

Each shard answers a ``PlanStarts`` with one ``StartsPlanned``: its plan, or the reuse of its
plan of less than 10 s before (``reuses``: that fact's event SLUID). The views keep the last
:data:`PLANS_KEPT` plans by event SLUID and resolve a reuse when they fold it (the plan it names
is earlier in the same shard's ledger order, so already folded), and keep the answers by
request SLUID and shard (the last :data:`REQUESTS_KEPT` requests; memory only).
``GET /v1/decisions`` answers a ``PlanStarts``'s SLUID with ``{"starts": {"shards": {shard:
answer}, "complete": bool}}`` once every shard answered (``complete``), or at the end of the
wait with the shards that did.

A reuse whose plan the views no longer hold (they were restarted from their store between the
two facts) is answered with no jobs and ``plan_missing``: the client shows N/A, as for a job
no plan covers.

Any user may send ``PlanStarts`` as fast as they like, each answered by a reuse: an answer holds
the plan's job list itself (a tuple, shared), never a copy, so the 10,000 answers kept cost
the views a few hundred bytes each whatever the plan's size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PLANS_KEPT", "REQUESTS_KEPT", "StartsView", "starts_answer"]

PLANS_KEPT = 64
"""The most plans (``StartsPlanned`` with jobs) the views keep, newest last."""
REQUESTS_KEPT = 10_000
"""The most ``PlanStarts`` requests whose answers the views keep, newest last."""

Row = dict[str, Any]


@dataclass(slots=True)
class StartsView:
    """Plans by event SLUID, answers by request SLUID and shard."""

    plans: dict[str, Row] = field(default_factory=dict)
    answers: dict[str, dict[str, Row]] = field(default_factory=dict)

    def fold(self, r: Row) -> None:
        """One ``StartsPlanned`` (its Avro body as a dict)."""
        reuses = str(r.get("reuses", ""))
        if reuses:
            plan = self.plans.get(reuses)
        else:
            plan = {
                "time_ms": r.get("time_ms", 0),
                "pending": r.get("pending", 0),
                "jobs": tuple(  # shared by every answer that reuses the plan: never copied
                    {"job_sluid": s, "job_id": i, "start_ms": t, "nodes": n}
                    for s, i, t, n in zip(r.get("job_sluids", ()), r.get("job_ids", ()),
                                          r.get("starts_ms", ()), r.get("nodes", ()),
                                          strict=False)
                ),
            }
            self.plans[str(r["event_sluid"])] = plan
            if len(self.plans) > PLANS_KEPT:
                del self.plans[next(iter(self.plans))]
        answer: Row = {
            "shard": r.get("shard", ""), "nonce": r.get("nonce", 0), "user": r.get("user", ""),
            "decided_ms": r.get("time_ms", 0), "reuses": reuses,
            "planned_ms": plan["time_ms"] if plan else 0,
            "pending": plan["pending"] if plan else r.get("pending", 0),
            "jobs": plan["jobs"] if plan else (),
            "plan_missing": plan is None,
        }
        request = str(r["request_sluid"])
        shards = self.answers.pop(request, {})  # a request answered again moves to the end
        shards[str(answer["shard"])] = answer
        self.answers[request] = shards
        if len(self.answers) > REQUESTS_KEPT:
            del self.answers[next(iter(self.answers))]


def starts_answer(view: StartsView, sluid: str, nonce: int,
                  shards: tuple[str, ...]) -> Row | None:
    """The decision about a ``PlanStarts``: the answers so far (None: none yet), ``complete``
    once every one of ``shards`` answered (with no shard list, the first answer is complete)."""
    found = view.answers.get(sluid)
    if not found:
        return None
    mine = {s: a for s, a in found.items() if not nonce or a.get("nonce", 0) == nonce}
    if not mine:
        return None
    complete = set(shards) <= set(mine) if shards else True
    return {"shards": mine, "complete": complete}
