"""Replay's fold (projections.replay): the merged order, its views, the paused collector."""

from __future__ import annotations

import gc
import random

import pytest

from projections.replay import Fact, LedgerGapError, by_shard, merge, paused_gc, views_at
from projections.views import Touched, Views
from tests.unit.projections.ledger_builder import LedgerBuilder


def shard_ledger(shard: str, start_ms: int) -> LedgerBuilder:
    """Two nodes, a job that ran on both and ended, one that ran and was requeued, one pending."""
    b = LedgerBuilder(shard=shard, start_ms=start_ms)
    b.node(f"{shard}-n1", cpus=8)
    b.node(f"{shard}-n2", cpus=8)
    done = b.queued(name="done", nodes_min=2, cpus_per_task=4)
    run = b.started(done, [f"{shard}-n1", f"{shard}-n2"])
    b.advance(1_000)
    b.ended(done, run, "COMPLETED")
    again = b.queued(name="again", cpus_per_task=2)
    run = b.started(again, [f"{shard}-n1"])
    b.advance(500)
    b.ended(again, run, "NODE_FAIL")
    waiting = b.queued(name="waiting")
    b.pending(waiting, "Resources")
    b.cycle(0, 3, pending=1, running=0, started=2)
    return b


def facts_of(*builders: LedgerBuilder) -> list[Fact]:
    facts = [Fact(name, record, 0, offset) for b in builders
             for offset, (name, record) in enumerate(b.facts)]
    random.Random(11).shuffle(facts)
    return facts


def test_views_at_gives_the_rows_of_apply_in_decision_order() -> None:
    facts = facts_of(shard_ledger("a", 1_767_225_600_000), shard_ledger("b", 1_767_225_600_300))
    expected = Views()
    for fact in merge(facts):
        expected.apply(fact.name, fact.record)

    views = views_at(facts)

    assert views.jobs == expected.jobs
    assert views.nodes == expected.nodes
    assert views.shard_seq == expected.shard_seq == {"a": 13, "b": 13}
    assert (views.last_fact_ms, views.cycle_ms, views.open_cycles) == (
        expected.last_fact_ms, expected.cycle_ms, expected.open_cycles)
    assert views.applied == expected.applied


def test_views_at_a_time_stops_after_the_last_fact_decided_by_then() -> None:
    b = shard_ledger("a", 1_767_225_600_000)
    at_ms = b.facts[6][1]["time_ms"]
    expected = Views()
    for name, record in b.facts:
        if record["time_ms"] <= at_ms:
            expected.apply(name, record)

    views = views_at(facts_of(b), at_ms=at_ms)

    assert views.jobs == expected.jobs and views.nodes == expected.nodes
    assert views.last_fact_ms == at_ms


def test_apply_next_out_of_order_holds_and_ignores_as_apply_does() -> None:
    b = shard_ledger("a", 1_767_225_600_000)
    (first_name, first), (second_name, second) = b.facts[0], b.facts[1]
    views, touched = Views(), Touched()

    views.apply_next(second_name, second, touched)  # ahead of its shard: held
    assert views.held == {"a": {2: (second_name, second)}} and views.shard_seq == {}
    views.apply_next(first_name, first, touched)
    assert [r["shard_seq"] for _n, r in views.applied] == [1, 2]
    assert views.held == {}
    views.apply_next(first_name, first, touched)  # a duplicate: nothing
    assert views.shard_seq == {"a": 2}
    assert touched.nodes == {"a-n1"}


def test_apply_next_adds_what_each_fact_changed_to_one_touched() -> None:
    b = shard_ledger("a", 1_767_225_600_000)
    views, touched = Views(), Touched()
    for name, record in b.facts[:6]:  # two nodes, a job queued and started on both
        views.apply_next(name, record, touched)

    assert touched.nodes == {"a-n1", "a-n2"}
    assert touched.jobs == {b.facts[4][1]["job_sluid"]}


@pytest.mark.parametrize(("seqs", "message"), [
    ([1, 3, 4], "shard a: expected shard_seq 2, found 3"),
    ([2, 1, 2], "shard a: expected shard_seq 3, found 2"),
    ([2, 3], "shard a: expected shard_seq 1, found 2"),
    ([1, 2, 0], "shard a: expected shard_seq 1, found 0"),
])
def test_a_gap_or_a_duplicate_in_a_shard_is_refused(seqs: list[int], message: str) -> None:
    facts = [Fact("JobPending", {"shard": "a", "shard_seq": seq, "time_ms": 0}, 0, i)
             for i, seq in enumerate(seqs)]
    with pytest.raises(LedgerGapError, match=f"^{message}$"):
        by_shard(facts)


def test_by_shard_orders_each_shard_by_sequence() -> None:
    facts = [Fact("JobPending", {"shard": shard, "shard_seq": seq, "time_ms": 0}, 0, i)
             for i, (shard, seq) in enumerate([("b", 2), ("a", 3), ("a", 1), ("b", 1), ("a", 2)])]

    shards = by_shard(facts)

    assert {s: [f.seq for f in items] for s, items in shards.items()} == {
        "b": [1, 2], "a": [1, 2, 3]}


def test_what_survives_a_paused_collector_is_in_the_oldest_generation() -> None:
    was_enabled = gc.isenabled()
    gc.enable()
    try:
        with paused_gc():
            assert not gc.isenabled()
            marker: list[list[int]] = [[1]]
        assert gc.isenabled()
        assert not any(o is marker for o in gc.get_objects(generation=0))
        assert any(o is marker for o in gc.get_objects(generation=2))
    finally:
        if not was_enabled:
            gc.disable()
