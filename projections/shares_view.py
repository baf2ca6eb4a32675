"""``sshare`` in the views: the shards' ``SharesComputed`` answers, kept apart from jobs.

Each shard answers a ``PlanShares`` with one ``SharesComputed``: its fair-share tree, or the
reuse of its answer of less than 10 s before, kept as :mod:`projections.shard_answers` keeps
every such answer (the last :data:`ANSWERS_KEPT` full answers; a reuse whose answer the views
no longer hold is answered with no associations and ``missing``). ``GET /v1/decisions``
answers a ``PlanShares``'s SLUID with ``{"shares": {"shards": {shard: answer}, "complete":
bool}}``; an infinite Level FS (an association that used nothing) is JSON ``null``.
"""

from __future__ import annotations

import math

from projections.shard_answers import Row, ShardAnswers, parallel_rows

__all__ = ["ANSWERS_KEPT", "COLUMNS", "SharesView", "shares_answer"]

ANSWERS_KEPT = 8
"""The most full answers (``SharesComputed`` with associations) the views keep, newest last."""
COLUMNS = {"accounts": "account", "users": "user", "depths": "depth",
           "raw_shares": "raw_shares", "norm_shares": "norm_shares", "raw_usage": "raw_usage",
           "norm_usage": "norm_usage", "effective_usage": "effective_usage",
           "level_fs": "level_fs", "fairshare": "fairshare"}
"""The fact's parallel lists (one entry per association) → the key of each answer row."""


def _finite(value: object) -> object:
    return None if isinstance(value, float) and not math.isfinite(value) else value


class SharesView(ShardAnswers):
    """The shards' ``SharesComputed`` answers."""

    __slots__ = ()
    FULL_KEPT = ANSWERS_KEPT

    def full_of(self, r: Row) -> Row:
        return {
            "time_ms": r.get("time_ms", 0),
            "associations": parallel_rows(r, COLUMNS, _finite),
        }

    def answer_of(self, r: Row, full: Row | None) -> Row:
        return {
            "computed_ms": full["time_ms"] if full else 0,
            "half_life_s": r.get("half_life_s", 0),
            "associations": full["associations"] if full else (),
            "missing": full is None,
        }


def shares_answer(view: ShardAnswers, sluid: str, nonce: int,
                  shards: tuple[str, ...]) -> Row | None:
    """The decision about a ``PlanShares`` (:meth:`ShardAnswers.answer`)."""
    return view.answer(sluid, nonce, shards)
