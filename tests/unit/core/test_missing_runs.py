"""Runs the shard holds on a node that the node's heartbeats no longer list (Slurm's
``_purge_missing_jobs``): noted, ended after ``MissingRunGrace`` in record time, and replayed."""

from __future__ import annotations

import pickle

import pytest

from scheduler import (
    CancelJob,
    ConfigError,
    JobEnded,
    NodeEpilogCompleted,
    NodeResponding,
    RunMissingNoted,
    parse_config,
)
from scheduler.evolve import evolve
from scheduler.nodes.missing_runs import START_MARGIN_MS
from scheduler.records import Fact
from scheduler.shard.state import initial_state, restore_state, state_meta
from tests.unit.core.gwt import CLUSTER, SHARD, T0, Scenario, given, node_sluid, nodes, spec
from tests.unit.core.requeue_fixtures import J1, exited, node_failed, run_of, running

GRACE_MS = 30_000
"""``MissingRunGrace``'s default, in ms."""
LATE = T0 + 60_000
"""A heartbeat time well after the run started (past ``START_MARGIN_MS``)."""


def _beat(name: str, at_ms: int, runs: tuple[str, ...] = (),
          exited_runs: tuple[str, ...] = ()) -> NodeResponding:
    return NodeResponding(node_sluid=node_sluid(name), name=name, runs=runs, exited=exited_runs,
                          time_ms=at_ms, sent_ms=at_ms)


def _step(scenario: Scenario, request: object, at_ms: int, ledger: list[Fact]) -> list[Fact]:
    """Decide ``request`` at ``at_ms``, fold its facts into the scenario and the ledger."""
    outcome = scenario.when(request, at_ms)  # type: ignore[arg-type]
    outcome.evolved()
    ledger.extend(outcome.facts)
    return outcome.facts


def _one_node_run(**fields: object) -> Scenario:
    return given(nodes("n", 2), running(J1, 1, ("n1",), spec(**fields)))


def test_a_run_missing_from_its_nodes_heartbeat_is_noted_and_not_ended_before_the_grace() -> None:
    scenario, ledger = _one_node_run(), []
    [noted] = _step(scenario, _beat("n1", LATE), LATE, ledger)
    assert isinstance(noted, RunMissingNoted)
    assert (noted.run_sluid, noted.name, noted.missing, noted.time_ms) == (
        run_of(1), "n1", True, LATE)
    assert scenario.state.jobs[J1].missing == ((run_of(1), "n1", LATE),)
    # still missing, one ms short of the grace: nothing
    assert _step(scenario, _beat("n1", LATE + GRACE_MS - 1), LATE + GRACE_MS - 1, ledger) == []
    assert scenario.state.jobs[J1].is_running


def test_after_the_grace_a_missing_run_ends_node_fail_and_is_requeued_with_the_reason() -> None:
    scenario, ledger = _one_node_run(), []
    _step(scenario, _beat("n1", LATE), LATE, ledger)
    facts = _step(scenario, _beat("n1", LATE + GRACE_MS), LATE + GRACE_MS, ledger)
    [end] = [f for f in facts if isinstance(f, JobEnded)]
    assert end.state == "NODE_FAIL"
    assert end.reason == "Run missing from node n1 (not running there for 30 s)"
    assert (end.job_state, end.requeue_reason) == ("COMPLETING", "NODE_FAIL")
    job = scenario.state.jobs[J1]
    assert job.state == "COMPLETING"
    assert job.reason.startswith("Run missing from node n1")


def test_a_job_that_may_not_be_requeued_ends_node_fail_for_good() -> None:
    scenario, ledger = _one_node_run(requeue="no"), []
    _step(scenario, _beat("n1", LATE), LATE, ledger)
    facts = _step(scenario, _beat("n1", LATE + GRACE_MS), LATE + GRACE_MS, ledger)
    [end] = [f for f in facts if isinstance(f, JobEnded)]
    assert (end.state, end.job_state) == ("NODE_FAIL", "NODE_FAIL")
    assert scenario.state.jobs[J1].state == "NODE_FAIL"
    assert scenario.state.nodes[node_sluid("n1")].state == "IDLE"  # the node is not failed


def test_an_exit_report_arriving_inside_the_grace_wins_with_its_real_exit_code() -> None:
    scenario, ledger = _one_node_run(), []
    _step(scenario, _beat("n1", LATE, exited_runs=()), LATE, ledger)
    [end] = _step(scenario, exited(J1, 1, "n1", 3), LATE + 1_000, ledger)
    assert isinstance(end, JobEnded)
    assert (end.state, end.exit_code) == ("FAILED", 3)
    assert _step(scenario, _beat("n1", LATE + GRACE_MS), LATE + GRACE_MS, ledger) == []
    assert scenario.state.jobs[J1].state == "FAILED"


def test_a_run_listed_as_exited_is_missing_too() -> None:
    scenario, ledger = _one_node_run(), []
    [noted] = _step(scenario, _beat("n1", LATE, (run_of(1),), (run_of(1),)), LATE, ledger)
    assert isinstance(noted, RunMissingNoted) and noted.missing
    listed_running = _beat("n1", LATE + 1, (run_of(1),))
    [withdrawn] = _step(scenario, listed_running, LATE + 1, ledger)
    assert isinstance(withdrawn, RunMissingNoted) and not withdrawn.missing


def test_a_run_that_started_after_the_heartbeat_was_sent_is_not_missing() -> None:
    scenario = _one_node_run()  # started at T0
    just_before = T0 + START_MARGIN_MS - 1
    assert scenario.when(_beat("n1", just_before), LATE).facts == []
    assert scenario.when(_beat("n1", T0 - 10_000), LATE).facts == []


def test_a_run_listed_again_withdraws_the_grace_and_a_later_miss_starts_it_over() -> None:
    scenario, ledger = _one_node_run(), []
    _step(scenario, _beat("n1", LATE), LATE, ledger)
    [withdrawn] = _step(scenario, _beat("n1", LATE + 5_000, (run_of(1),)), LATE + 5_000, ledger)
    assert isinstance(withdrawn, RunMissingNoted) and not withdrawn.missing
    assert scenario.state.jobs[J1].missing == ()
    # missing again at LATE + grace: a new note, not an end (the grace counts from here)
    [noted] = _step(scenario, _beat("n1", LATE + GRACE_MS), LATE + GRACE_MS, ledger)
    assert isinstance(noted, RunMissingNoted) and noted.missing
    assert scenario.state.jobs[J1].is_running


def test_a_kill_in_progress_wins_over_node_fail() -> None:
    scenario, ledger = _one_node_run(), []
    _step(scenario, CancelJob(job_sluid=J1, user="alice"), LATE - 1, ledger)
    _step(scenario, _beat("n1", LATE), LATE, ledger)
    facts = _step(scenario, _beat("n1", LATE + GRACE_MS), LATE + GRACE_MS, ledger)
    [end] = [f for f in facts if isinstance(f, JobEnded)]
    assert end.state == "CANCELLED"
    assert end.reason.startswith("Run missing from node n1")


def test_the_grace_comes_from_missing_run_grace() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec(requeue="no")),
                     config="MissingRunGrace: 5\n")
    ledger: list[Fact] = []
    _step(scenario, _beat("n1", LATE), LATE, ledger)
    facts = _step(scenario, _beat("n1", LATE + 5_000), LATE + 5_000, ledger)
    assert [type(f) for f in facts][:1] == [JobEnded]


def test_missing_run_grace_defaults_to_30_s_and_must_be_at_least_1() -> None:
    assert parse_config("").health.missing_run_grace_s == 30
    assert parse_config("MissingRunGrace: 7\n").health.missing_run_grace_s == 7
    with pytest.raises(ConfigError, match="MissingRunGrace must be at least 1"):
        parse_config("MissingRunGrace: 0\n")


def test_an_epilog_never_reported_counts_done_after_the_grace_and_the_requeue_completes() -> None:
    scenario = given(nodes("n", 3), running(J1, 1, ("n1", "n2"), spec()))
    ledger: list[Fact] = []
    _step(scenario, node_failed("n1"), T0 + 1_000, ledger)  # requeue waits for n2's epilog
    assert scenario.state.jobs[J1].completing == ("n2",)
    # n2 still lists the run (its epilog runs): nothing
    assert _step(scenario, _beat("n2", LATE, (run_of(1),)), LATE, ledger) == []
    # n2 dropped the run, its ReportEpilog was lost
    [noted] = _step(scenario, _beat("n2", LATE + 1_000), LATE + 1_000, ledger)
    assert isinstance(noted, RunMissingNoted) and noted.missing
    facts = _step(scenario, _beat("n2", LATE + 1_000 + GRACE_MS), LATE + 1_000 + GRACE_MS, ledger)
    [done] = [f for f in facts if isinstance(f, NodeEpilogCompleted)]
    assert done.ok and done.detail.startswith("Epilog not reported: Run missing from node n2")
    assert scenario.state.jobs[J1].state == "PENDING"  # requeued


def test_replaying_the_ledger_gives_the_same_state_missing_times_included() -> None:
    base = [*nodes("n", 3), *running(J1, 1, ("n1",), spec())]
    scenario = given(*base)
    ledger: list[Fact] = []
    _step(scenario, _beat("n1", LATE), LATE, ledger)
    _step(scenario, _beat("n1", LATE + 10_000), LATE + 10_000, ledger)  # still missing: nothing
    mid = scenario.state.jobs[J1]
    assert mid.missing == ((run_of(1), "n1", LATE),)
    _step(scenario, _beat("n1", LATE + GRACE_MS), LATE + GRACE_MS, ledger)
    replay = given(*base)  # the same given facts, then the recorded ones, folded
    for fact in ledger:
        replay.state = evolve(replay.state, fact)
    assert replay.state.jobs == scenario.state.jobs
    assert replay.state.nodes == scenario.state.nodes
    # a ledger cut after the note, folded into a fresh state, still knows when it went missing
    cut = given(*base)
    for fact in ledger[:1]:
        cut.state = evolve(cut.state, fact)
    assert cut.state.jobs[J1].missing == mid.missing
    assert initial_state(SHARD, CLUSTER).jobs == {}


def test_the_end_of_the_run_drops_its_notes_so_an_epilog_gets_a_grace_of_its_own() -> None:
    scenario, ledger = _one_node_run(), []
    _step(scenario, _beat("n1", LATE, (run_of(1),), (run_of(1),)), LATE, ledger)  # exited
    assert scenario.state.jobs[J1].missing
    [end] = _step(scenario, exited(J1, 1, "n1", 0), LATE + 1_000, ledger)
    assert isinstance(end, JobEnded) and end.state == "COMPLETED"
    assert scenario.state.jobs[J1].missing == ()


def test_an_up_node_still_running_a_run_the_shard_ended_gets_a_terminate_for_it() -> None:
    scenario, ledger = _one_node_run(), []
    _step(scenario, exited(J1, 1, "n1", 0), LATE, ledger)  # ended; its TERMINATE was lost
    assert scenario.state.nodes[node_sluid("n1")].state == "IDLE"
    facts = _step(scenario, _beat("n1", LATE + 20_000, (run_of(1),)), LATE + 20_000, ledger)
    [kill] = [f for f in facts if type(f).__name__ == "RunKillRequested"]
    assert (kill.run_sluid, kill.reason, kill.nodes) == (run_of(1), "TERMINATE", ("n1",))
    assert not any(isinstance(f, RunMissingNoted) for f in facts)


def test_a_node_still_waiting_on_an_answer_for_an_ended_run_gets_its_terminate() -> None:
    scenario, ledger = _one_node_run(), []
    _step(scenario, exited(J1, 1, "n1", 0), LATE, ledger)  # decided; its TERMINATE was refused
    # the node dropped the run after its epilog but still lists its end report as unanswered
    facts = _step(scenario, _beat("n1", LATE + 20_000, (), (run_of(1),)), LATE + 20_000, ledger)
    assert [(type(f).__name__, getattr(f, "reason", ""), getattr(f, "nodes", ()))
            for f in facts] == [("RunKillRequested", "TERMINATE", ("n1",))]


def test_a_forward_for_the_runs_only_decides_no_return_to_service() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    scenario.when(node_failed("n1")).evolved()  # DOWN, Not responding: would return
    runs_only = NodeResponding(node_sluid=node_sluid("n1"), name="n1", time_ms=LATE,
                               sent_ms=LATE, answers=False)
    assert scenario.when(runs_only, LATE).facts == []
    answering = NodeResponding(node_sluid=node_sluid("n1"), name="n1", time_ms=LATE,
                               sent_ms=LATE)
    [back] = scenario.when(answering, LATE).facts
    assert (type(back).__name__, back.state) == ("NodeStateChanged", "IDLE")  # type: ignore[attr-defined]


def test_a_restored_shard_decides_the_same_end_at_the_same_time() -> None:
    """The shard store keeps the fold's rows (pickled): after a restart between the note and the
    end, the same heartbeat gives the same facts, byte for byte."""
    scenario, ledger = _one_node_run(), []
    _step(scenario, _beat("n1", LATE), LATE, ledger)
    state = scenario.state
    restored = restore_state(
        pickle.loads(pickle.dumps(state_meta(state))),
        {k: pickle.loads(pickle.dumps(v)) for k, v in state.jobs.items()},
        {k: pickle.loads(pickle.dumps(v)) for k, v in state.nodes.items()},
    )
    assert restored.jobs[J1].missing == ((run_of(1), "n1", LATE),)
    again = _beat("n1", LATE + GRACE_MS)
    live = scenario.when(again, LATE + GRACE_MS).facts
    scenario.state = restored
    assert scenario.when(again, LATE + GRACE_MS).facts == live
    assert [type(f) for f in live][:1] == [JobEnded]
