"""``sprio`` in the views: the shards' ``PrioritiesComputed`` answers, kept apart from jobs.

Each shard answers a ``PlanPriorities`` with one ``PrioritiesComputed``: its jobs' priority
factors, or the reuse of its answer of less than 10 s before (``reuses``: that fact's event
SLUID), as ``squeue --start``'s plans (:mod:`projections.starts_view`, whose rules this
follows: the last :data:`ANSWERS_KEPT` full answers by event SLUID, the last
:data:`REQUESTS_KEPT` requests' answers by request SLUID and shard; memory only; a reuse whose
answer the views no longer hold is answered with no jobs and ``missing``). ``GET
/v1/decisions`` answers a ``PlanPriorities``'s SLUID with ``{"priorities": {"shards": {shard:
answer}, "complete": bool}}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ANSWERS_KEPT", "COLUMNS", "REQUESTS_KEPT", "PrioritiesView", "priorities_answer"]

ANSWERS_KEPT = 64
"""The most full answers (``PrioritiesComputed`` with jobs) the views keep, newest last."""
REQUESTS_KEPT = 10_000
"""The most ``PlanPriorities`` requests whose answers the views keep, newest last."""
COLUMNS = {"job_sluids": "job_sluid", "job_ids": "job_id", "priorities": "priority",
           "age": "age", "fairshare": "fairshare", "jobsize": "jobsize",
           "partition": "partition_factor", "qos": "qos", "nice": "nice",
           "admin_priorities": "admin_priority"}
"""The fact's parallel lists (one entry per job) → the key of each job's answer row."""

Row = dict[str, Any]


@dataclass(slots=True)
class PrioritiesView:
    """Full answers by event SLUID, answers by request SLUID and shard."""

    full: dict[str, Row] = field(default_factory=dict)
    answers: dict[str, dict[str, Row]] = field(default_factory=dict)

    def fold(self, r: Row) -> None:
        """One ``PrioritiesComputed`` (its Avro body as a dict)."""
        reuses = str(r.get("reuses", ""))
        if reuses:
            computed = self.full.get(reuses)
        else:
            keys = tuple(COLUMNS.values())
            computed = {
                "time_ms": r.get("time_ms", 0),
                "jobs": tuple(  # shared by every answer that reuses it: never copied
                    dict(zip(keys, values, strict=True))
                    for values in zip(*(r.get(c, ()) for c in COLUMNS), strict=False)
                ),
            }
            self.full[str(r["event_sluid"])] = computed
            if len(self.full) > ANSWERS_KEPT:
                del self.full[next(iter(self.full))]
        answer: Row = {
            "shard": r.get("shard", ""), "nonce": r.get("nonce", 0), "user": r.get("user", ""),
            "decided_ms": r.get("time_ms", 0), "reuses": reuses,
            "computed_ms": computed["time_ms"] if computed else 0,
            "weights": dict(r.get("weights") or {}),
            "jobs": computed["jobs"] if computed else (),
            "missing": computed is None,
        }
        request = str(r["request_sluid"])
        shards = self.answers.pop(request, {})  # a request answered again moves to the end
        shards[str(answer["shard"])] = answer
        self.answers[request] = shards
        if len(self.answers) > REQUESTS_KEPT:
            del self.answers[next(iter(self.answers))]


def priorities_answer(view: PrioritiesView, sluid: str, nonce: int,
                      shards: tuple[str, ...]) -> Row | None:
    """The decision about a ``PlanPriorities``: the answers so far (None: none yet),
    ``complete`` once every one of ``shards`` answered (no shard list: the first answer)."""
    found = view.answers.get(sluid)
    if not found:
        return None
    mine = {s: a for s, a in found.items() if not nonce or a.get("nonce", 0) == nonce}
    if not mine:
        return None
    complete = set(shards) <= set(mine) if shards else True
    return {"shards": mine, "complete": complete}
