"""The views fold ``ReservationSet`` and ``ReservationDeleted`` into ``Views.reservations``
(every shard's nodes; gone once every shard that had it recorded its end)."""

from __future__ import annotations

from projections.replay import views_at
from tests.unit.projections.ledger_builder import LedgerBuilder
from tests.unit.projections.test_replay_fold import facts_of

T0 = 1_767_225_600_000


def _set(b: LedgerBuilder, nodes: list[str], **extra: object) -> None:
    fields: dict[str, object] = {
        "request_sluid": "s00000000000R1", "name": "maint", "created": True,
        "start_ms": T0 + 60_000, "end_ms": T0 + 3_660_000, "nodes": nodes, "users": ["root"],
        "accounts": [], "flags": ["MAINT"], "by": "olga"}
    fields.update(extra)
    b.fact("ReservationSet", **fields)


def test_a_reservation_is_shown_changed_and_gone() -> None:
    b = LedgerBuilder(shard="a", start_ms=T0)
    _set(b, ["a-n1", "a-n2"])
    views = views_at(facts_of(b))
    row = views.reservations["maint"]
    assert (row["nodes"], row["flags"], row["by"]) == (["a-n1", "a-n2"], ["MAINT"], "olga")
    assert (row["start_ms"], row["end_ms"]) == (T0 + 60_000, T0 + 3_660_000)
    _set(b, ["a-n2"], created=False, request_sluid="s00000000000R2")
    views = views_at(facts_of(b))
    assert views.reservations["maint"]["nodes"] == ["a-n2"]
    assert views.reservations["maint"]["request_sluid"] == "s00000000000R2"
    b.fact("ReservationDeleted", request_sluid="", name="maint", ended=True, by="")
    assert views_at(facts_of(b)).reservations == {}


def test_each_shards_nodes_are_kept_until_each_shard_ends_it() -> None:
    a = LedgerBuilder(shard="a", start_ms=T0)
    _set(a, ["a-n1"])
    b = LedgerBuilder(shard="b", start_ms=T0)
    _set(b, ["b-n1"])
    views = views_at([*facts_of(a), *facts_of(b)])
    assert views.reservations["maint"]["nodes"] == ["a-n1", "b-n1"]
    a.fact("ReservationDeleted", request_sluid="s00000000000R3", name="maint", by="olga")
    views = views_at([*facts_of(a), *facts_of(b)])
    assert views.reservations["maint"]["nodes"] == ["b-n1"]
