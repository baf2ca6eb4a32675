"""The shards' answers to a question every shard answers, kept apart from jobs.

``squeue --start`` (``PlanStarts`` → ``StartsPlanned``: :mod:`projections.starts_view`) and
``sprio`` (``PlanPriorities`` → ``PrioritiesComputed``: :mod:`projections.priorities_view`)
are answered the same way: each shard answers a request with one fact, its full answer or the
reuse of its full answer of less than 10 s before (``reuses``: that fact's event SLUID). The
views keep the last ``FULL_KEPT`` full answers by event SLUID and resolve a reuse when they
fold it (the answer it names is earlier in the same shard's ledger order, so already folded),
and keep the answers by request SLUID and shard (the last :data:`REQUESTS_KEPT` requests;
memory only). A reuse whose full answer the views no longer hold (they were restarted from
their store between the two facts) is answered without it: the client shows N/A.

Any user may send such requests as fast as they like, each answered by a reuse: an answer holds
the full answer's job list itself (a tuple, shared), never a copy, so the 10,000 answers kept
cost the views a few hundred bytes each whatever the list's size.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

__all__ = ["REQUESTS_KEPT", "Row", "ShardAnswers", "parallel_rows"]

REQUESTS_KEPT = 10_000
"""The most requests whose answers the views keep, newest last."""

Row = dict[str, Any]


def parallel_rows(r: Row, columns: dict[str, str],
                  convert: Callable[[Any], Any] = lambda value: value) -> tuple[Row, ...]:
    """A fact's parallel lists (``columns``: list field → row key) as one row per entry,
    each value through ``convert``; a tuple, shared by every answer that reuses the fact."""
    keys = tuple(columns.values())
    return tuple(dict(zip(keys, map(convert, values), strict=True))
                 for values in zip(*(r.get(c, ()) for c in columns), strict=False))


class ShardAnswers:
    """Full answers by event SLUID, answers by request SLUID and shard.

    A kind of answer says how its full answer is kept (:meth:`full_of`, with its ``time_ms``)
    and how one shard's answer row shows it (:meth:`answer_of`; ``full`` None: a reuse the
    views no longer hold), and how many full answers are kept (``FULL_KEPT``)."""

    __slots__ = ("answers", "full")
    FULL_KEPT: ClassVar[int] = 64

    def __init__(self) -> None:
        self.full: dict[str, Row] = {}
        self.answers: dict[str, dict[str, Row]] = {}

    def __eq__(self, other: object) -> bool:  # views are compared (a replay with a fold)
        return (type(other) is type(self) and isinstance(other, ShardAnswers)
                and (self.full, self.answers) == (other.full, other.answers))

    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as a dataclass with eq

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.full)} full, {len(self.answers)} requests)"

    def full_of(self, r: Row) -> Row:
        """The full answer a fact that is not a reuse holds."""
        raise NotImplementedError

    def answer_of(self, r: Row, full: Row | None) -> Row:
        """What one shard's answer row shows of the full answer it stands for."""
        raise NotImplementedError

    def fold(self, r: Row) -> None:
        """One answer fact (its Avro body as a dict)."""
        reuses = str(r.get("reuses", ""))
        if reuses:
            computed = self.full.get(reuses)
        else:
            computed = self.full_of(r)
            self.full[str(r["event_sluid"])] = computed
            if len(self.full) > self.FULL_KEPT:
                del self.full[next(iter(self.full))]
        answer: Row = {
            "shard": r.get("shard", ""), "nonce": r.get("nonce", 0), "user": r.get("user", ""),
            "decided_ms": r.get("time_ms", 0), "reuses": reuses, **self.answer_of(r, computed),
        }
        request = str(r["request_sluid"])
        shards = self.answers.pop(request, {})  # a request answered again moves to the end
        shards[str(answer["shard"])] = answer
        self.answers[request] = shards
        if len(self.answers) > REQUESTS_KEPT:
            del self.answers[next(iter(self.answers))]

    def answer(self, sluid: str, nonce: int, shards: tuple[str, ...]) -> Row | None:
        """The decision about the request ``sluid``: the answers so far with ``nonce`` (any
        when 0; None: none yet), ``complete`` once every one of ``shards`` answered (with no
        shard list, the first answer is complete)."""
        found = self.answers.get(sluid)
        if not found:
            return None
        mine = {s: a for s, a in found.items() if not nonce or a.get("nonce", 0) == nonce}
        if not mine:
            return None
        complete = set(shards) <= set(mine) if shards else True
        return {"shards": mine, "complete": complete}
