"""Replay's fold (projections.replay): the merged order, its views, the paused collector."""

from __future__ import annotations

import copy
import gc
import random

import pytest

from projections.replay import Fact, LedgerGapError, by_shard, merge, paused_gc, views_at
from projections.views import Touched, Views
from schemas import decode, encode
from schemas.catalog import CATALOG
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


def every_fact_type(shard: str, start_ms: int) -> LedgerBuilder:
    """Every fact the ledger holds, of each kind the views fold or ignore, on one shard."""
    b = LedgerBuilder(shard=shard, start_ms=start_ms)
    b.config("cluster", "Partitions:\n  - PartitionName: main\n    Default: YES\n")
    for name in ("n1", "n2", "n3"):
        b.node(f"{shard}-{name}", cpus=8, features=("block=b1",) if name == "n3" else ())
    b.config("topology", f"BlockName=b0 Nodes={shard}-n1,{shard}-n2\nBlockSizes=2\n")
    n1, n2, n3 = f"{shard}-n1", f"{shard}-n2", f"{shard}-n3"
    done = b.queued(name="done", nodes_min=2, cpus_per_task=4, script="#!/bin/sh\ntrue\n")
    b.pending(done, "Priority", priority=7)
    run = b.started(done, [n1, n2])
    step = b.sluid()
    ids = {"job_sluid": done, "job_id": b.job_ids[done], "run_sluid": run, "step_sluid": step,
           "step_id": 0}
    b.fact("StepStarted", **ids, user="alice", nodes=[n1, n2], tasks_per_node=[1, 1],
           cpus_per_task=1, command=["true"], workdir="/w", env={}, io_address="n1:1",
           io_token="t")
    b.fact("StepTasksExited", **ids, node_name=n2, exit_code=0, signal=0)
    b.fact("StepEnded", **ids, state="COMPLETED", exit_code=0, signal=0, reason="",
           unfinished_nodes=[])
    waiting = {**ids, "step_sluid": b.sluid()}  # a step that waited, then srun cancelled it
    b.fact("StepPending", **{k: v for k, v in waiting.items() if k != "step_id"}, user="alice",
           nodes=[n1], tasks_per_node=[1], cpus_per_task=1, command=["true"], workdir="/w",
           env={}, io_address="n1:2", io_token="u", reason="Requested nodes are busy")
    b.fact("StepEnded", **{**waiting, "step_id": -1}, state="CANCELLED", exit_code=0, signal=0,
           reason="cancelled by alice", unfinished_nodes=[])
    b.fact("RunSignalled", job_sluid=done, run_sluid=run, nodes=[n1, n2], signal=10,
           scope="BATCH", reason="REQUESTED", requester="alice")
    b.fact("TimeLimitChanged", job_sluid=done, run_sluid=run, nodes=[n1, n2], time_limit_s=600,
           previous_s=60, requester="")
    b.fact("JobDetailsChanged", job_sluid=done, run_sluid=run, name="renamed", comment="c",
           mail_type="", mail_user="", array="", changed=["comment", "name"], requester="alice")
    b.advance(1_000).ended(done, run, "COMPLETED")
    failing = b.queued(name="failing", requeue="expedite")
    b.updated(failing, name="failing-2")
    run = b.started(failing, [n1])
    b.kill(failing, run, "NODE_FAIL", [n1])
    b.fact("RunMissingNoted", job_sluid=failing, run_sluid=run, node_sluid=b.node_sluids[n1],
           name=n1, missing=True, heartbeat_ms=1_767_225_600_000)
    b.fact("NodeSuspected", node_sluid=b.node_sluids[n1], name=n1, reason="silent",
           silent_nodes=1, watched_nodes=2)
    b.node_state(n1, "DOWN", "Not responding")
    b.advance(500).ended(failing, run, "NODE_FAIL")
    b.expediting(failing, run)
    b.epilog(failing, run, n1, ok=False, detail="node down")
    b.requeued(failing, run, expedite=True)
    held = b.queued(name="held")
    b.fact("JobPrioritySet", job_sluid=held, priority=100)
    b.fact("ReservationSet", request_sluid=b.sluid(), name="maint", created=True,
           start_ms=1_767_225_700_000, end_ms=1_767_229_300_000, nodes=[n1], users=["root"],
           accounts=[], flags=["MAINT"], by="olga")
    b.fact("ReservationSet", request_sluid=b.sluid(), name="gone", created=True,
           start_ms=1_767_225_700_000, end_ms=1_767_229_300_000, nodes=[n2], users=["root"],
           accounts=[], flags=[], by="olga")
    b.fact("ReservationDeleted", request_sluid=b.sluid(), name="gone", ended=False, by="olga")
    b.held(held, admin=True)
    b.released(held)
    b.held(held)
    b.fact("JobRejected", job_sluid=b.sluid(), reason="InvalidAccount", detail="no account")
    b.fact("JobRejected", job_sluid=held, reason="Duplicate", detail="already queued")
    b.fact("RequestDenied", request="CancelJob", subject_sluid=held, requester="bob",
           reason="NotOwner", detail="not yours")
    b.fact("JobTestAnswered", job_sluid=b.sluid(), nonce=3, user="alice", job_id=9,
           start_ms=1_767_225_660_000, nodes=f"{n1},{n2}", cpus=2, partition="main",
           reason="", detail="")
    plan = b.fact("StartsPlanned", request_sluid=b.sluid(), nonce=4, user="alice",
                  reuses="", pending=1, job_sluids=[held], job_ids=[7],
                  starts_ms=[1_767_225_660_000], nodes=[n1])
    b.fact("StartsPlanned", request_sluid=b.sluid(), nonce=5, user="bob",
           reuses=plan["event_sluid"], pending=1, job_sluids=[], job_ids=[], starts_ms=[], nodes=[])
    answer = b.fact("PrioritiesComputed", request_sluid=b.sluid(), nonce=6, user="alice",
                    reuses="", weights={"age": 1000}, job_sluids=[held], job_ids=[7],
                    priorities=[10], age=[10], fairshare=[0], jobsize=[0], partition=[0],
                    qos=[0], nice=[0], admin_priorities=[0])
    b.fact("PrioritiesComputed", request_sluid=b.sluid(), nonce=7, user="bob",
           reuses=answer["event_sluid"], weights={"age": 1000})
    shares = b.fact("SharesComputed", request_sluid=b.sluid(), nonce=8, user="alice",
                    reuses="", half_life_s=0, accounts=["root", "root"], users=["", "alice"],
                    depths=[0, 1], raw_shares=[-1, 1], norm_shares=[1.0, 1.0],
                    raw_usage=[60.0, 60.0], norm_usage=[1.0, 1.0], effective_usage=[1.0, 1.0],
                    level_fs=[float("inf"), 1.0], fairshare=[-1.0, 1.0])
    b.fact("SharesComputed", request_sluid=b.sluid(), nonce=9, user="bob",
           reuses=shares["event_sluid"])
    b.fact("NodeCommandRefused", node_sluid=b.node_sluids[n3], name=n3, command="KillRun",
           reason="unknown run")
    b.cycle(0, 9, pending=2, running=0, started=2)
    b.fact("JobQueued", job_sluid=b.sluid(), job_id=99, spec={"user": "carol", "command": ["x"]})
    b.node_state(n1, "IDLE")  # a cycle left open
    return b


def state_of(views: Views) -> dict[str, object]:
    """Everything a fold leaves in the views."""
    return {key: getattr(views, key) for key in (
        "jobs", "nodes", "shard_seq", "job_ids", "configs", "last_fact_ms", "cycle_ms",
        "open_cycles", "default_partition", "blocks", "private_jobs", "privileged", "denials",
        "array_ids", "held", "applied", "tests", "starts", "priorities", "shares", "reservations")}


def decoded(facts: list[Fact]) -> list[Fact]:
    """The facts as a ledger read gives them: through the codec (every field, defaults in)."""
    return [Fact(*decode(encode(f.name, f.record)), f.partition, f.offset) for f in facts]


@pytest.mark.parametrize("through_codec", [True, False], ids=["decoded", "as-built"])
def test_fold_merged_gives_the_rows_of_apply_on_every_fact_type(through_codec: bool) -> None:
    built = facts_of(every_fact_type("a", 1_767_225_600_000),
                     every_fact_type("b", 1_767_225_600_300))
    facts = decoded(built) if through_codec else built
    expected = Views()
    for fact in merge(facts):
        expected.apply(fact.name, copy.deepcopy(fact.record))

    views = views_at(facts)

    assert state_of(views) == state_of(expected)
    assert {f.name for f in facts} == FACT_NAMES  # every kind of fact, folded or ignored


FACT_NAMES = {"ConfigApplied", "NodeRegistered", "NodeStateChanged", "JobQueued", "JobPending",
              "JobStarted", "StepPending", "StepStarted", "StepTasksExited", "StepEnded",
              "JobEnded", "RunKillRequested", "RunSignalled", "NodeSuspected", "JobExpediting",
              "NodeEpilogCompleted", "JobRequeued", "JobHeld", "JobReleased", "JobRejected",
              "RequestDenied", "NodeCommandRefused", "CycleCompleted", "RunMissingNoted",
              "JobTestAnswered", "StartsPlanned", "TimeLimitChanged", "JobPrioritySet",
              "JobDetailsChanged",
              "PrioritiesComputed", "SharesComputed", "ReservationSet", "ReservationDeleted"}


def test_every_fact_name_of_the_schemas_is_in_the_fold_test() -> None:
    facts = {name for name in CATALOG.names
             if CATALOG.entry(name).parsed.get("sluice.role") == "fact"}
    assert facts == FACT_NAMES


def test_fold_merged_out_of_order_holds_and_ignores_as_apply_does() -> None:
    """Facts not in decision order (a shard's later fact first, a duplicate), records that are
    not facts and an unknown fact name: :meth:`Views.fold_merged` falls back to ``apply``."""
    b = every_fact_type("a", 1_767_225_600_000)
    facts = [Fact(name, record, 0, n) for n, (name, record) in enumerate(b.facts)]
    base = {"event_sluid": "x", "time_ms": 1_767_225_600_000}
    odd = [
        facts[3], *facts[:3], facts[1],  # a later fact first (held), then a duplicate
        Fact("JobPending", {**base, "job_sluid": "j"}, 0, 90),  # not a fact: no sequence
        Fact("NodeResponding", {**base, "shard": "a", "shard_seq": len(facts) + 1}, 0, 91),
        *facts[4:],
    ]
    expected = Views()
    for fact in odd:
        expected.apply(fact.name, copy.deepcopy(fact.record))

    views = Views()
    views.fold_merged(copy.deepcopy(odd))

    assert state_of(views) == state_of(expected)
    assert views.shard_seq == {"a": len(facts) + 1} and views.held == {}


def test_fold_merged_tells_progress_every_thousand_facts_and_stops_at_a_time() -> None:
    b = LedgerBuilder(shard="a", start_ms=1_767_225_600_000)
    for _ in range(2_500):
        b.advance(1).cycle(0, 0)
    told: list[int] = []
    views = Views()
    views.fold_merged(merge(facts_of(b)), at_ms=1_767_225_600_000 + 2_100, advance=told.append)
    assert told == [1000, 1000] and views.shard_seq == {"a": 2_100}
    assert views.applied == [b.facts[2_099]]
