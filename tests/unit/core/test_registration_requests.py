"""The shard asks a node whose registration it refused to register again
(scheduler/nodes/registration_requests.py): when the cluster configuration changes and when a
node goes down; the registration that follows is decided as any other."""

from __future__ import annotations

from typing import Any

from scheduler import (
    ApplyConfig,
    Attributed,
    Identity,
    NodeFailed,
    NodeRegistered,
    RegisterNode,
    evolve,
    node_commands,
)
from scheduler.nodes.registration_requests import REFUSED_KEPT
from scheduler.records import RequestRegistration
from tests.unit.core.gwt import T0, Scenario, given, node_sluid, sluid

CONFIGURED = "Nodes:\n  - NodeName: n1\n    CPUs: 4\n    RealMemory: 1000\n"
HOST_A = Identity(user="root", uid=0, gid=0, kind="munge", service=True, host="10.0.0.3")
HOST_B = Identity(user="root", uid=0, gid=0, kind="munge", service=True, host="10.0.0.9")
REQUIRED = "AuthRequired: true\nAuthNodeNames: ['n*']\n"


def fold(scenario: Scenario, request: Any) -> list[Any]:
    """Decide ``request``, fold its facts; the node commands they imply."""
    commands: list[Any] = []
    for fact in scenario.when(request).facts:
        scenario.state = evolve(scenario.state, fact)
        commands += node_commands(scenario.state, fact)
    return commands


def register(name: str, sluid_: str, cpus: int = 4) -> RegisterNode:
    return RegisterNode(node_sluid=sluid_, name=name, cpus=cpus, mem_mb=1000)


def asks(commands: list[Any]) -> list[str]:
    return [c.node_sluid for c in commands if isinstance(c, RequestRegistration)]


def test_a_node_the_configuration_did_not_list_is_asked_again_once_it_is_listed() -> None:
    scenario = given(config=CONFIGURED)
    n2 = node_sluid("n2")
    assert fold(scenario, register("n2", n2)) == []  # INVALID_REG: Node not in configuration
    assert scenario.state.meta.refused_nodes == (n2,)
    listed = CONFIGURED + "  - NodeName: n2\n    CPUs: 4\n    RealMemory: 1000\n"
    commands = fold(scenario, ApplyConfig(config_sluid=sluid(90), kind="cluster", text=listed))
    assert commands == [RequestRegistration(node_sluid=n2, issued_ms=T0,
                                            reason="the cluster configuration changed")]
    facts = scenario.when(register("n2", n2)).facts
    assert [type(f).__name__ for f in facts] == ["NodeRegistered", "NodeStateChanged"]
    fold(scenario, register("n2", n2))
    assert scenario.state.meta.refused_nodes == ()  # registered: never asked again
    assert asks(fold(scenario, ApplyConfig(config_sluid=sluid(91), kind="cluster",
                                           text=listed))) == []


def test_a_node_with_too_few_resources_is_asked_again_when_the_configuration_changes() -> None:
    scenario = given(config=CONFIGURED)
    n1 = node_sluid("n1")
    fold(scenario, register("n1", n1, cpus=2))  # Low CPUs (reported 2 < configured 4)
    assert scenario.state.meta.refused_nodes == (n1,)
    lowered = CONFIGURED.replace("CPUs: 4", "CPUs: 2")
    assert asks(fold(scenario, ApplyConfig(config_sluid=sluid(90), kind="cluster",
                                           text=lowered))) == [n1]
    # a topology change is no reason to ask
    assert asks(fold(scenario, ApplyConfig(config_sluid=sluid(91), kind="topology",
                                           text="topology: {}\n"))) == []


def test_a_name_held_by_another_identity_is_asked_for_again_once_its_holder_is_down() -> None:
    scenario = given(config=REQUIRED)
    old, new = sluid(20), sluid(21)
    fold(scenario, Attributed(request=register("n3", old), identity=HOST_A))
    assert fold(scenario, Attributed(request=register("n3", new), identity=HOST_B)) == []
    assert scenario.state.meta.refused_nodes == (new,)  # NodeIdentityChanged
    commands = fold(scenario, NodeFailed(node_sluid=old, name="n3", reason="Not responding",
                                         time_ms=T0))
    assert commands == [RequestRegistration(node_sluid=new, issued_ms=T0,
                                            reason="a node went down")]
    facts = scenario.when(Attributed(request=register("n3", new), identity=HOST_B)).facts
    assert any(isinstance(f, NodeRegistered) and f.node_sluid == new for f in facts), facts


def test_only_the_newest_refused_nodes_are_remembered() -> None:
    scenario = given(config=CONFIGURED)
    for i in range(REFUSED_KEPT + 3):
        fold(scenario, register(f"x{i}", sluid(100 + i)))
    kept = scenario.state.meta.refused_nodes
    assert len(kept) == REFUSED_KEPT and kept[-1] == sluid(100 + REFUSED_KEPT + 2)
    assert sluid(100) not in kept and sluid(103) in kept


def test_a_sluid_another_name_holds_is_refused_and_its_holder_named_in_the_request() -> None:
    # Two daemons that start in the same millisecond can mint the same SLUID (the CI saw node01
    # and node04 do so): the second registration must not take the first node's place.
    scenario = given()
    shared = sluid(30)
    fold(scenario, register("node01", shared))
    facts = scenario.when(register("node04", shared)).facts
    assert [(type(f).__name__, getattr(f, "reason", "")) for f in facts] == [
        ("RequestDenied", "NodeSluidInUse")]
    commands = fold(scenario, register("node04", shared))
    assert [(c.node_sluid, c.holder) for c in commands
            if isinstance(c, RequestRegistration)] == [(shared, "node01")]
    held = scenario.state.nodes[shared]
    assert (held.name, held.state) == ("node01", "IDLE")  # the holder untouched
    assert scenario.state.node_by_name == {"node01": shared}
    assert scenario.state.meta.refused_nodes == ()  # asked at once, not remembered
    fresh = sluid(31)  # the newcomer's daemon mints another and registers
    assert [type(f).__name__ for f in scenario.when(register("node04", fresh)).facts] == [
        "NodeRegistered", "NodeStateChanged"]


def test_a_down_nodes_sluid_may_be_taken_by_another_name_as_before() -> None:
    scenario = given()
    shared = sluid(30)
    fold(scenario, register("node01", shared))
    fold(scenario, NodeFailed(node_sluid=shared, name="node01", reason="Not responding",
                              time_ms=T0))
    facts = scenario.when(register("node09", shared)).facts
    assert any(isinstance(f, NodeRegistered) and f.name == "node09" for f in facts), facts


def test_a_registration_refused_under_the_sluid_in_service_names_the_refused_identity() -> None:
    # Seen live: node01's daemon, its state directory older than node.credential, restarted
    # with a node JWT under its munge SLUID; refused (NodeIdentityChanged) while its own
    # heartbeats kept that SLUID in service: no DOWN ever asked it again, wedged for good.
    scenario = given(config=REQUIRED)
    old = sluid(20)
    fold(scenario, Attributed(request=register("n3", old), identity=HOST_A))
    jwt = Identity(user="n3", uid=0, gid=0, kind="jwt", node="n3")
    commands = fold(scenario, Attributed(request=register("n3", old), identity=jwt))
    assert [(c.node_sluid, c.holder, c.refused) for c in commands] == [(old, "n3", "jwt node n3")]
    moved = fold(scenario, Attributed(request=register("n3", old), identity=HOST_B))
    assert [c.refused for c in moved] == ["munge root@10.0.0.9"]  # the state directory moved
    # the same identity again is no refusal; under a SLUID not in service, no such request
    assert fold(scenario, Attributed(request=register("n3", old), identity=HOST_A)) == []
    assert fold(scenario, Attributed(request=register("n3", sluid(21)), identity=jwt)) == []
