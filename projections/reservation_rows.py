"""The reservations' rows: ``Views.reservations``, by name, folded from ``ReservationSet`` and
``ReservationDeleted`` (what ``scontrol show reservation`` and ``sinfo -T`` print).

Every shard decides a reservation request over its own nodes and records its own fact, so a
row keeps each shard's nodes (``shard_nodes``) and shows their union (``nodes``, in shard
order); it is gone when every shard that had it recorded its end or deletion. The times are the
facts' (absolute Unix ms): no rule of the core is applied here; whether it is ACTIVE is the
reader's clock against ``start_ms``/``end_ms``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["reservation_deleted", "reservation_set"]

Row = dict[str, Any]


def reservation_set(v: Any, r: Row, t: Any) -> None:
    """A reservation created or changed by one shard."""
    del t
    row = v.reservations.get(r["name"]) or {"shard_nodes": {}}
    row.update(
        name=r["name"], start_ms=r["start_ms"], end_ms=r["end_ms"], users=list(r["users"]),
        accounts=list(r["accounts"]), flags=list(r["flags"]), by=r.get("by", ""),
        request_sluid=r["request_sluid"], time_ms=r["time_ms"],
    )
    row["shard_nodes"][r["shard"]] = list(r["nodes"])
    row["nodes"] = _union(row["shard_nodes"])
    v.reservations[r["name"]] = row


def reservation_deleted(v: Any, r: Row, t: Any) -> None:
    """A reservation gone from one shard (deleted, or its end came)."""
    del t
    row = v.reservations.get(r["name"])
    if row is None:
        return
    row["shard_nodes"].pop(r["shard"], None)
    if not row["shard_nodes"]:
        del v.reservations[r["name"]]
        return
    row["nodes"] = _union(row["shard_nodes"])


def _union(by_shard: dict[str, list[str]]) -> list[str]:
    return list(dict.fromkeys(n for shard in sorted(by_shard) for n in by_shard[shard]))
