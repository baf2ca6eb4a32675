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


def test_a_job_held_by_its_reservations_deletion_shows_rd_until_released() -> None:
    from projections.job_states import short_state, shown_state

    b = LedgerBuilder(shard="a", start_ms=T0)
    _set(b, ["a-n1"], flags=[], users=["alice"])
    job = b.queued(reservation="maint")
    b.pending(job, "Reservation")
    b.fact("ReservationDeleted", request_sluid="s00000000000R3", name="maint", by="olga")
    b.pending(job, "ReservationDeleted", priority=0)
    row = views_at(facts_of(b)).jobs[job]
    assert (row["reason"], row["priority"], row["flags"]) == (
        "ReservationDeleted", 0, ["RESV_DEL_HOLD"])
    assert (shown_state(row["state"], row["flags"]), short_state(row["state"], row["flags"])
            ) == ("RESV_DEL_HOLD", "RD")  # Slurm's job_state_string and squeue's ST
    b.held(job)  # a user's hold too: the reason stays the deletion's
    assert views_at(facts_of(b)).jobs[job]["reason"] == "ReservationDeleted"
    b.updated(job, reservation="")  # the release: the reservation off, then released
    b.released(job)
    row = views_at(facts_of(b)).jobs[job]
    assert (row["reason"], row["flags"], row["reservation"]) == ("None", [], "")


def test_the_flag_stays_under_an_operators_hold_and_goes_with_another_reason() -> None:
    b = LedgerBuilder(shard="a", start_ms=T0)
    job = b.queued(reservation="gone")
    b.pending(job, "ReservationDeleted", priority=0)
    b.held(job, admin=True)
    b.pending(job, "JobHeldAdmin", priority=0)
    row = views_at(facts_of(b)).jobs[job]
    assert (row["reason"], row["flags"]) == ("JobHeldAdmin", ["RESV_DEL_HOLD"])
    b.updated(job, reservation="")  # scontrol update Reservation=: the next pass's reason
    b.pending(job, "Resources")
    row = views_at(facts_of(b)).jobs[job]
    assert (row["reason"], row["flags"]) == ("Resources", [])
