"""Heartbeats that ran ahead of the workers' clock by more than ``CommandTTL``: the health
agent's ``NodeClockAhead`` drains the node (``scheduler.nodes.clock_ahead``), unless it is
DRAIN or DOWN already; a repeat, an unknown node or a credential changes nothing more."""

from __future__ import annotations

from scheduler import Attributed, Identity, NodeStateChanged, RequestDenied, ResumeNode, evolve
from scheduler.records import Fact, NodeClockAhead
from tests.unit.core.gwt import T0, Scenario, given, node_sluid, nodes, spec
from tests.unit.core.requeue_fixtures import J1, running
from tests.unit.core.test_foundation import state_changed

AT = T0 + 5_000


def _ahead(name: str = "n1", ahead_ms: int = 400_321) -> NodeClockAhead:
    return NodeClockAhead(node_sluid=node_sluid(name), name=name, ahead_ms=ahead_ms, time_ms=AT)


def _step(scenario: Scenario, request: object, at_ms: int = AT) -> list[Fact]:
    outcome = scenario.when(request, at_ms)  # type: ignore[arg-type]
    outcome.evolved()
    return outcome.facts


def test_heartbeats_ahead_drain_the_node_with_the_clock_skew_reason() -> None:
    scenario = given(nodes("n", 2))
    [drained] = _step(scenario, _ahead())
    assert isinstance(drained, NodeStateChanged)
    assert (drained.name, drained.state, drained.reason, drained.by) == (
        "n1", "DRAIN", "Clock skew: heartbeats 400 s ahead", "")
    node = scenario.state.nodes[node_sluid("n1")]
    assert (node.state, node.reason) == ("DRAIN", "Clock skew: heartbeats 400 s ahead")
    assert scenario.state.nodes[node_sluid("n2")].state == "IDLE"


def test_a_repeat_decides_nothing_more() -> None:
    scenario = given(nodes("n", 2))
    _step(scenario, _ahead())
    assert _step(scenario, _ahead(ahead_ms=900_000), AT + 1_000) == []
    assert scenario.state.nodes[node_sluid("n1")].reason == "Clock skew: heartbeats 400 s ahead"


def test_a_node_drained_or_down_keeps_its_reason() -> None:
    drained = given(nodes("n", 2), state_changed("n1", "DRAIN", "fan"))
    assert _step(drained, _ahead()) == []
    assert drained.state.nodes[node_sluid("n1")].reason == "fan"
    down = given(nodes("n", 2), state_changed("n1", "DOWN", "Not responding"))
    assert _step(down, _ahead()) == []
    assert down.state.nodes[node_sluid("n1")].state == "DOWN"


def test_nothing_else_changes_its_running_job_runs_on_and_resume_returns_it() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    facts = _step(scenario, _ahead())
    assert [type(f).__name__ for f in facts] == ["NodeStateChanged"]
    assert scenario.state.jobs[J1].state == "RUNNING"
    [back] = _step(scenario, ResumeNode(name="n1", user="root"), AT + 60_000)
    assert isinstance(back, NodeStateChanged) and back.state == "IDLE"


def test_an_unknown_node_changes_nothing() -> None:
    assert given(nodes("n", 2)).when(_ahead("x9"), AT).facts == []


def test_it_is_internal_a_client_credential_is_denied() -> None:
    scenario = given(nodes("n", 2))
    n1_jwt = Identity(user="sluice", kind="jwt", node="n1")
    [denied] = scenario.when(Attributed(request=_ahead(), identity=n1_jwt), AT).facts
    assert isinstance(denied, RequestDenied) and denied.reason == "InternalRequest"
    assert scenario.state.nodes[node_sluid("n1")].state == "IDLE"


def test_replay_gives_the_same_facts_and_state() -> None:
    base = nodes("n", 2)
    scenario = given(base)
    ledger = _step(scenario, _ahead())
    assert given(base).when(_ahead(), AT).facts == ledger
    replay = given(base)
    for fact in ledger:
        replay.state = evolve(replay.state, fact)
    assert replay.state.nodes == scenario.state.nodes
