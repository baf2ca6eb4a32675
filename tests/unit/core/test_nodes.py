"""Node lifecycle: registration rules, failure (NODE_FAIL), re-registration."""

from __future__ import annotations

from scheduler import (
    JobEnded,
    NodeFailed,
    NodeRegistered,
    NodeStateChanged,
    RegisterNode,
    RunKillRequested,
)
from tests.unit.core.gwt import M, given, node_sluid, nodes, queued, registered, sluid, spec
from tests.unit.core.test_foundation import started, state_changed

J1 = sluid(1)
CONFIGURED = "Nodes:\n  - NodeName: n[1-2]\n    CPUs: 8\n    RealMemory: 1000\n"


def test_a_configured_node_reporting_less_than_configured_is_invalid() -> None:
    request = RegisterNode(node_sluid=node_sluid("n1"), name="n1", cpus=4, mem_mb=1000)
    given(config=CONFIGURED).when(request).then(
        state_changed("n1", "INVALID_REG", "Low CPUs (reported 4 < configured 8)")
    )


def test_a_configured_node_registers_with_its_configured_resources() -> None:
    request = RegisterNode(node_sluid=node_sluid("n1"), name="n1", cpus=16, mem_mb=4000)
    given(config=CONFIGURED).when(request).then(
        NodeRegistered(
            **M,
            node_sluid=node_sluid("n1"),
            name="n1",
            cpus=8,
            mem_mb=1000,
            gpus=0,
            gpu_type="",
            features=(),
            partitions=("main",),
        ),
        state_changed("n1", "IDLE"),
    ).then_nodes(n1="IDLE")


def test_a_failed_node_goes_down_and_its_runs_end_with_node_fail() -> None:
    run = sluid(901)
    outcome = given(
        nodes("n", 2),
        queued(J1, spec(nodes_min=2, requeue="no")),
        started(J1, 1, ("n1", "n2")),
        state_changed("n1", "ALLOCATED"),
        state_changed("n2", "ALLOCATED"),
    ).when(NodeFailed(node_sluid=node_sluid("n1"), name="n1", reason="Not responding", time_ms=0))
    outcome.then(
        state_changed("n1", "DOWN", "Not responding"),
        RunKillRequested(**M, job_sluid=J1, run_sluid=run, reason="NODE_FAIL", nodes=("n2",)),
        JobEnded(
            **M, job_sluid=J1, job_id=1, run_sluid=run, state="NODE_FAIL", reason="Not responding"
        ),
    ).then_nodes(n2="IDLE")
    state = outcome.evolved()
    assert state.jobs[J1].state == "NODE_FAIL"
    assert not state.index.usable[state.index.pos["n1"]]


def test_a_down_node_that_registers_again_returns_to_service() -> None:
    request = RegisterNode(node_sluid=node_sluid("n1"), name="n1", cpus=1, mem_mb=0)
    given(registered("n1"), state_changed("n1", "DOWN", "Not responding")).when(request).then(
        state_changed("n1", "IDLE")
    ).then_nodes(n1="IDLE")


def test_a_name_registering_under_a_new_sluid_replaces_the_old_node() -> None:
    new = sluid(700)
    outcome = given(registered("n1")).when(
        RegisterNode(node_sluid=new, name="n1", cpus=1, mem_mb=0)
    )
    outcome.then_kinds(NodeStateChanged, NodeRegistered, NodeStateChanged)
    first = outcome.facts[0]
    assert isinstance(first, NodeStateChanged)
    assert (first.node_sluid, first.state) == (node_sluid("n1"), "DOWN")
    state = outcome.evolved()
    assert state.node_sluid_by_name("n1") == new
    assert state.index.names == ["n1"] and state.index.sluids == [new]
    assert state.nodes[node_sluid("n1")].superseded


def test_a_failure_of_an_unknown_or_down_node_changes_nothing() -> None:
    failed = NodeFailed(node_sluid=node_sluid("zz"), name="zz", reason="x", time_ms=0)
    given(nodes("n", 1)).when(failed).then_nothing()
    down = NodeFailed(node_sluid=node_sluid("n1"), name="n1", reason="x", time_ms=0)
    given(registered("n1"), state_changed("n1", "DOWN")).when(down).then_nothing()
