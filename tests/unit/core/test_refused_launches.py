"""A launch refused as expired while it was fresh by the shard's own record time: the node's
clock runs ahead, so it is drained and the run requeued at once (``scheduler.nodes.
refused_launches``); a stale refusal, another reason, another run or a repeat changes nothing."""

from __future__ import annotations

import pytest

from scheduler import (
    Attributed,
    CancelJob,
    Identity,
    JobEnded,
    JobRequeued,
    NodeEpilogCompleted,
    NodeStateChanged,
    RequestDenied,
    ResumeNode,
    RunKillRequested,
    evolve,
)
from scheduler.records import Fact, NodeCommandRefused, ReportCommandRefused
from tests.unit.core.gwt import T0, Scenario, given, node_sluid, nodes, schedule_pass, spec
from tests.unit.core.requeue_fixtures import EXPEDITE_ON, J1, epilog, exited, run_of, running
from tests.unit.core.test_foundation import state_changed

TTL_MS = 300_000
"""``CommandTTL``'s default: the worker signs each command to expire this long after it."""
EXPIRY = T0 + TTL_MS
"""The signed expiry of the ``LaunchRun`` the shard issued at ``T0`` (the run's start)."""
SOON = T0 + 2_000
"""The refusal's decision time: two seconds after the launch was issued."""
NODES_CONF = "AuthRequired: true\nAuthNodeNames: ['n*']\n"


def _refused(name: str = "n1", run: str = "", *, reason: str = "CommandExpired",
             command: str = "LaunchRun", expiry_ms: int = EXPIRY) -> ReportCommandRefused:
    return ReportCommandRefused(node_sluid=node_sluid(name), node_name=name, command=command,
                                run_sluid=run or run_of(1), reason=reason,
                                detail="expired 98 s ago", expiry_ms=expiry_ms)


def _step(scenario: Scenario, request: object, at_ms: int) -> list[Fact]:
    outcome = scenario.when(request, at_ms)  # type: ignore[arg-type]
    outcome.evolved()
    return outcome.facts


def _kinds(facts: list[Fact]) -> list[str]:
    return [type(f).__name__ for f in facts]


def test_a_fresh_launch_refused_as_expired_drains_the_node_and_requeues_the_run_at_once() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    facts = _step(scenario, _refused(), SOON)
    assert _kinds(facts) == ["NodeCommandRefused", "NodeStateChanged", "JobEnded",
                             "NodeEpilogCompleted", "JobRequeued"]
    drained = facts[1]
    assert isinstance(drained, NodeStateChanged)
    assert (drained.name, drained.state) == ("n1", "DRAIN")
    assert drained.reason == ("Clock skew: refused a fresh launch as expired "
                              "(ahead by more than 298 s)")
    end = facts[2]
    assert isinstance(end, JobEnded)
    assert (end.run_sluid, end.state, end.job_state, end.requeue_reason) == (
        run_of(1), "NODE_FAIL", "COMPLETING", "NODE_FAIL")
    assert end.reason.startswith("Launch refused by node n1: its clock runs ahead")
    assert isinstance(facts[3], NodeEpilogCompleted) and facts[3].ok  # nothing ran there
    requeued = facts[4]
    assert isinstance(requeued, JobRequeued) and requeued.reason == "NODE_FAIL"
    job = scenario.state.jobs[J1]
    assert (job.state, job.restart_count, job.run_sluid) == ("PENDING", 1, "")
    node = scenario.state.nodes[node_sluid("n1")]
    assert (node.state, node.reason) == ("DRAIN", drained.reason)


def test_the_requeued_job_starts_on_another_node_and_never_on_the_drained_one() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec(requeue="expedite")),
                     config=EXPEDITE_ON)
    facts = _step(scenario, _refused(), SOON)
    [requeued] = [f for f in facts if isinstance(f, JobRequeued)]
    assert requeued.begin_time_ms == 0  # expedited: eligible at once
    started = scenario.when(schedule_pass(), SOON).evolved().jobs[J1]
    assert started.state == "RUNNING" and started.nodes == ("n2",)


def test_a_stale_refusal_a_replayed_old_copy_changes_nothing_but_its_record() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    for at_ms in (EXPIRY, EXPIRY + 60_000):  # decided at or after the command's own expiry
        facts = scenario.when(_refused(), at_ms).facts
        assert _kinds(facts) == ["NodeCommandRefused"]
    assert scenario.state.jobs[J1].is_running
    assert scenario.state.nodes[node_sluid("n1")].state == "IDLE"


@pytest.mark.parametrize("reason", ["CommandUnsigned", "CommandSignatureMalformed",
                                    "CommandSignatureInvalid", "CommandForOtherNode",
                                    "CommandReplayed", "NoCommandKey"])
def test_no_other_refusal_reason_drains_or_ends_anything(reason: str) -> None:
    """An unsigned, forged, altered or misaddressed record is anyone's to write; a replay ran."""
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    assert _kinds(scenario.when(_refused(reason=reason), SOON).facts) == ["NodeCommandRefused"]


def test_a_refused_kill_or_a_report_without_the_signed_expiry_changes_nothing() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    assert _kinds(scenario.when(_refused(command="KillRun"), SOON).facts) == [
        "NodeCommandRefused"]
    older_daemon = _refused(expiry_ms=0)  # a daemon of an earlier release sends none
    assert _kinds(scenario.when(older_daemon, SOON).facts) == ["NodeCommandRefused"]


def test_a_refusal_for_a_run_not_on_that_node_or_already_ended_changes_nothing() -> None:
    scenario = given(nodes("n", 3), running(J1, 1, ("n1",), spec()))
    assert _kinds(scenario.when(_refused("n2"), SOON).facts) == ["NodeCommandRefused"]
    assert _kinds(scenario.when(_refused(run="sUNKNOWNRUN000"), SOON).facts) == [
        "NodeCommandRefused"]
    _step(scenario, CancelJob(job_sluid=J1, user="alice"), SOON - 500)
    _step(scenario, exited(J1, 1, "n1", 0, 15), SOON - 400)  # the cancel ended it
    assert not scenario.state.jobs[J1].is_running
    assert _kinds(scenario.when(_refused(), SOON).facts) == ["NodeCommandRefused"]
    assert scenario.state.nodes[node_sluid("n1")].state == "IDLE"


def test_a_repeated_report_the_intake_forwarded_twice_decides_nothing_more() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    _step(scenario, _refused(), SOON)
    jobs, node = dict(scenario.state.jobs), scenario.state.nodes[node_sluid("n1")]
    again = _step(scenario, _refused(), SOON + 300)
    assert _kinds(again) == ["NodeCommandRefused"]
    assert scenario.state.jobs == jobs and scenario.state.nodes[node_sluid("n1")] == node


def test_a_kill_in_progress_ends_the_run_with_its_own_state() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    [kill] = _step(scenario, CancelJob(job_sluid=J1, user="alice"), SOON - 500)
    assert isinstance(kill, RunKillRequested)
    facts = _step(scenario, _refused(), SOON)
    [end] = [f for f in facts if isinstance(f, JobEnded)]
    assert end.state == "CANCELLED"
    assert scenario.state.jobs[J1].state == "CANCELLED"
    assert scenario.state.nodes[node_sluid("n1")].state == "DRAIN"


def test_a_multi_node_run_waits_only_for_the_other_nodes_epilogs() -> None:
    scenario = given(nodes("n", 3), running(J1, 1, ("n1", "n2"), spec()))
    facts = _step(scenario, _refused("n2"), SOON)
    assert _kinds(facts) == ["NodeCommandRefused", "NodeStateChanged", "JobEnded",
                             "NodeEpilogCompleted"]
    job = scenario.state.jobs[J1]
    assert (job.state, job.completing) == ("COMPLETING", ("n1",))
    _step(scenario, epilog(J1, 1, "n1"), SOON + 1_000)
    assert scenario.state.jobs[J1].state == "PENDING"


def test_a_node_already_drained_keeps_the_operators_reason() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()),
                     state_changed("n1", "DRAIN", "fan"))
    facts = _step(scenario, _refused(), SOON)
    assert "NodeStateChanged" not in _kinds(facts) and "JobRequeued" in _kinds(facts)
    assert scenario.state.nodes[node_sluid("n1")].reason == "fan"


def test_an_operator_resume_returns_the_drained_node_to_service() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    _step(scenario, _refused(), SOON)
    [back] = _step(scenario, ResumeNode(name="n1", user="root"), SOON + 60_000)
    assert isinstance(back, NodeStateChanged) and back.state == "IDLE"
    assert scenario.state.nodes[node_sluid("n1")].state == "IDLE"


def test_only_the_nodes_own_credential_may_report_a_refusal() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()), config=NODES_CONF)
    alice = Identity(user="alice", uid=1001, gid=1001, kind="munge")
    n2_jwt = Identity(user="sluice", kind="jwt", node="n2")
    for who in (alice, n2_jwt):
        [denied] = scenario.when(Attributed(request=_refused(), identity=who), SOON).facts
        assert isinstance(denied, RequestDenied) and denied.reason == "NotNodeCredential"
    # n2's own credential naming n2 but n1's SLUID: not n2's node, ignored
    assert scenario.when(Attributed(request=_forged_as_n2(), identity=n2_jwt), SOON).facts == []
    assert scenario.when(_refused(), SOON).facts[0].__class__ is RequestDenied  # no credential
    n1_jwt = Identity(user="sluice", kind="jwt", node="n1")
    facts = scenario.when(Attributed(request=_refused(), identity=n1_jwt), SOON).facts
    assert _kinds(facts)[:3] == ["NodeCommandRefused", "NodeStateChanged", "JobEnded"]


def _forged_as_n2() -> ReportCommandRefused:
    return ReportCommandRefused(node_sluid=node_sluid("n1"), node_name="n2", command="LaunchRun",
                                run_sluid=run_of(1), reason="CommandExpired",
                                expiry_ms=EXPIRY)


def test_replaying_the_ledger_rebuilds_the_same_state() -> None:
    base = [*nodes("n", 2), *running(J1, 1, ("n1",), spec())]
    scenario = given(*base)
    ledger = _step(scenario, _refused(), SOON)
    assert any(isinstance(f, NodeCommandRefused) for f in ledger)
    replay = given(*base)
    for fact in ledger:
        replay.state = evolve(replay.state, fact)
    assert replay.state.jobs == scenario.state.jobs
    assert replay.state.nodes == scenario.state.nodes
    # and deciding the same refusal on the same state gives the same facts, byte for byte
    assert given(*base).when(_refused(), SOON).facts == ledger
