"""``sshare`` in the views: the shards' ``SharesComputed`` kept by request, reuses resolved."""

from __future__ import annotations

import json

from projections.shares_view import SharesView, shares_answer


def _fact(event: str, request: str, shard: str, reuses: str = "", nonce: int = 1,
          rows: int = 0) -> dict[str, object]:
    return {"event_sluid": event, "request_sluid": request, "shard": shard, "nonce": nonce,
            "user": "alice", "time_ms": 5, "reuses": reuses, "half_life_s": 0,
            "accounts": ["root"] + ["physics"] * (rows - 1) if rows else [],
            "users": [""] + [f"u{i}" for i in range(1, rows)] if rows else [],
            "depths": [0] + [1] * (rows - 1) if rows else [],
            "raw_shares": [-1] + [1] * (rows - 1) if rows else [],
            "norm_shares": [1.0] * rows, "raw_usage": [0.0] * rows,
            "norm_usage": [0.0] * rows, "effective_usage": [0.0] * rows,
            "level_fs": [float("inf")] + [2.0] * (rows - 1) if rows else [],
            "fairshare": [-1.0] + [1.0] * (rows - 1) if rows else []}


def test_an_answer_is_complete_once_every_shard_answered_and_a_reuse_shares_the_rows() -> None:
    view = SharesView()
    view.fold(_fact("e1", "r1", "shard-0", rows=3))
    assert shares_answer(view, "r1", 1, ("shard-0", "shard-1"))["complete"] is False
    view.fold(_fact("e2", "r1", "shard-1", rows=1))
    answer = shares_answer(view, "r1", 1, ("shard-0", "shard-1"))
    assert answer["complete"] is True
    rows = answer["shards"]["shard-0"]["associations"]
    assert [(r["account"], r["user"], r["depth"]) for r in rows] == [
        ("root", "", 0), ("physics", "u1", 1), ("physics", "u2", 1)]
    view.fold(_fact("e3", "r2", "shard-0", reuses="e1"))
    again = shares_answer(view, "r2", 1, ("shard-0",))
    assert again["shards"]["shard-0"]["associations"] is rows
    assert shares_answer(view, "r2", 99, ("shard-0",)) is None  # another client's nonce


def test_an_infinite_level_fs_is_null_so_the_answer_is_strict_json() -> None:
    view = SharesView()
    view.fold(_fact("e1", "r1", "shard-0", rows=2))
    answer = shares_answer(view, "r1", 1, ())
    text = json.dumps(answer, allow_nan=False)  # raises on inf/nan
    rows = json.loads(text)["shards"]["shard-0"]["associations"]
    assert rows[0]["level_fs"] is None and rows[1]["level_fs"] == 2.0


def test_a_reuse_of_an_answer_the_views_no_longer_hold_says_so() -> None:
    view = SharesView()
    view.fold(_fact("e9", "r1", "shard-0", reuses="gone"))
    answer = shares_answer(view, "r1", 1, ())
    assert answer["shards"]["shard-0"]["missing"] is True
    assert answer["shards"]["shard-0"]["associations"] == ()
