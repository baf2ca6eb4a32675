"""The views fold facts in (shard, shard_seq) order, whatever order the partitions deliver."""

from __future__ import annotations

import random

from projections.extras import history, partitions_summary
from projections.views import Views
from tests.unit.projections.ledger_builder import LedgerBuilder


def ledger() -> LedgerBuilder:
    b = LedgerBuilder()
    b.node("n1", features=("block=b1",))
    b.node("n2", partitions=("main", "gpu"))
    job = b.queued(name="first")
    run = b.started(job, ["n1"])
    b.advance(1_000)
    b.ended(job, run, "COMPLETED")
    other = b.queued(name="second", partition="")
    b.pending(other, "Resources")
    return b


def test_a_shuffled_ledger_folds_to_the_same_views_as_the_ordered_one() -> None:
    b = ledger()
    ordered, shuffled = Views(), Views()
    for name, record in b.facts:
        ordered.apply(name, record)
    facts = list(b.facts)
    random.Random(7).shuffle(facts)
    applied = []
    for name, record in facts:
        shuffled.apply(name, record)
        applied += shuffled.applied

    assert shuffled.jobs == ordered.jobs
    assert shuffled.nodes == ordered.nodes
    assert shuffled.held == {}
    assert [r["shard_seq"] for _n, r in applied] == list(range(1, len(facts) + 1))


def test_a_fact_ahead_of_a_gap_is_held_and_a_duplicate_is_ignored() -> None:
    b = ledger()
    views = Views()
    (first_name, first), (second_name, second) = b.facts[0], b.facts[1]

    assert views.apply(second_name, second) is not None
    assert views.applied == [] and views.held == {b.shard: {2: (second_name, second)}}
    assert views.apply(second_name, second) is None
    views.apply(first_name, first)
    assert [r["shard_seq"] for _n, r in views.applied] == [1, 2]
    assert views.apply(first_name, first) is None


def test_the_default_partition_and_blocks_show_in_the_rows() -> None:
    b = ledger()
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    assert views.nodes["n1"]["block"] == "b1"
    assert (views.job("2") or {})["partition"] == "main"
    summary = partitions_summary(views, {})["partitions"]
    assert {(r["partition"], r["count"]) for r in summary} == {("main", 2), ("gpu", 1)}
    assert next(r for r in summary if r["partition"] == "main")["blocks"] == ["b1"]
    runs = history(views, {})["runs"]
    assert [(r["job_id"], r["state"]) for r in runs] == [(1, "COMPLETED"), (2, "PENDING")]


def test_a_node_in_service_shows_idle_mixed_or_allocated_from_the_runs_on_it() -> None:
    b = LedgerBuilder()
    b.node("n1", cpus=8)
    b.node("n2", cpus=8)
    small, whole = b.queued(cpus_per_task=2), b.queued(cpus_per_task=8)
    small_run, whole_run = b.started(small, ["n1"]), b.started(whole, ["n2"])
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    assert {n: r["state"] for n, r in views.nodes.items()} == {"n1": "MIXED", "n2": "ALLOCATED"}
    done = len(b.facts)
    b.ended(small, small_run)
    b.node_state("n2", "DRAIN", "maintenance")
    for name, record in b.facts[done:]:
        views.apply(name, record)
    assert {n: r["state"] for n, r in views.nodes.items()} == {"n1": "IDLE", "n2": "DRAIN"}
    done = len(b.facts)
    b.ended(whole, whole_run)
    b.node_state("n2", "IDLE")
    for name, record in b.facts[done:]:
        views.apply(name, record)
    assert {n: r["service"] for n, r in views.nodes.items()} == {"n1": "IDLE", "n2": "IDLE"}
    assert views.nodes["n2"]["state"] == "IDLE"


def test_an_older_ledger_announcing_allocated_reads_as_in_service() -> None:
    b = LedgerBuilder()
    b.node("n1", cpus=8)
    job = b.queued(cpus_per_task=2)
    run = b.started(job, ["n1"])
    b.node_state("n1", "ALLOCATED")  # what the core announced before deriving it
    b.ended(job, run)
    b.node_state("n1", "IDLE")
    views = Views()
    shown = []
    for name, record in b.facts:
        views.apply(name, record)
        shown.append(views.nodes["n1"]["state"] if "n1" in views.nodes else "")
    assert shown[-4:] == ["MIXED", "MIXED", "IDLE", "IDLE"]
