"""Node failure, drain, resume and re-registration (Slurm's ReturnToService=1 rules)."""

from __future__ import annotations

from scheduler import (
    DrainNode,
    JobRejected,
    JobStarted,
    NodeFailed,
    RegisterNode,
    ResumeNode,
)
from tests.unit.core.gwt import given, node_sluid, nodes, queued, registered, schedule_pass, spec
from tests.unit.core.requeue_fixtures import (
    AFTER_DELAY,
    J1,
    J2,
    ended,
    epilog,
    epilog_done,
    exited,
    kill,
    node_failed,
    requeued,
    running,
)
from tests.unit.core.test_foundation import state_changed

TWO = ("n1", "n2")


def _register(name: str) -> RegisterNode:
    return RegisterNode(node_sluid=node_sluid(name), name=name, cpus=1, mem_mb=0)


def test_a_missed_heartbeat_is_slurms_not_responding_with_the_agents_detail() -> None:
    failed = NodeFailed(
        node_sluid=node_sluid("n1"), name="n1", reason="no heartbeat for 10.2 s", time_ms=0
    )
    given(nodes("n", 1)).when(failed).then(
        state_changed("n1", "DOWN", "Not responding (no heartbeat for 10.2 s)")
    )


def test_drain_lets_runs_finish_and_starts_nothing_new_there() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()), queued(J2, job_id=2))
    scenario.when(DrainNode(name="n1", reason="bad DIMM", user="root")).then(
        state_changed("n1", "DRAIN", "bad DIMM", by="root")  # (authentication off: the claim)
    ).evolved()
    scenario.when(exited(J1, 1, "n1", 0)).then(ended(J1, 1, "COMPLETED")).evolved()
    [start] = scenario.when(schedule_pass()).matching(JobStarted)
    assert start.nodes == ("n2",)


def test_drain_down_fails_the_node_now_and_requeues_its_runs() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(DrainNode(name="n2", reason="fan", down=True)).then(
        state_changed("n2", "DOWN", "fan"),
        kill(J1, 1, "NODE_FAIL", ("n1",)),
        ended(J1, 1, "NODE_FAIL", "fan"),
    ).evolved()
    scenario.when(epilog(J1, 1, "n1")).then(
        epilog_done(J1, 1, "n1"),
        requeued(J1, 1, "NODE_FAIL", begin_time_ms=AFTER_DELAY),
    ).then_nodes(n1="IDLE")


def test_resume_returns_a_drained_or_down_node_as_its_runs_occupy_it() -> None:
    busy = given(nodes("n", 1), running(J1, 1, ("n1",), spec()), state_changed("n1", "DRAIN", "x"))
    busy.when(ResumeNode(name="n1")).then(state_changed("n1", "IDLE")).then_nodes(n1="ALLOCATED")
    down = given(nodes("n", 1), state_changed("n1", "DOWN", "fan"))
    down.when(ResumeNode(name="n1", user="root")).then(state_changed("n1", "IDLE")).then_nodes(
        n1="IDLE"
    )
    given(nodes("n", 1)).when(ResumeNode(name="n1")).then_nothing()


def test_only_operators_drain_or_resume_nodes() -> None:
    [refused] = given(nodes("n", 1)).when(DrainNode(name="n1", reason="x", user="bob")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "AccessDenied"
    assert refused.job_sluid == node_sluid("n1")
    drained = given(nodes("n", 1), config="Operators: [bob]\n")
    drained.when(DrainNode(name="n1", reason="x", user="bob")).then(
        state_changed("n1", "DRAIN", "x", by="bob")
    )
    down = given(nodes("n", 1), state_changed("n1", "DOWN", "x"))
    [refused] = down.when(ResumeNode(name="n1", user="bob")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "AccessDenied"
    given(nodes("n", 1)).when(DrainNode(name="nx", reason="x")).then_nothing()


def test_a_node_registering_again_while_it_ran_something_fails_those_runs_and_returns() -> None:
    """The daemon registers once a start: the registration that finds the node rebooted fails
    its old runs and, as ReturnToService (1, the default) returns a rebooted node, returns it
    (it used to wait for a second registration that never came: a daemon restarted within the
    node timeout left its node DOWN for good while it heartbeated)."""
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(_register("n1")).then(
        state_changed("n1", "DOWN", "Node unexpectedly rebooted"),
        kill(J1, 1, "NODE_FAIL", ("n2",)),
        ended(J1, 1, "NODE_FAIL", "Node unexpectedly rebooted"),
        state_changed("n1", "IDLE"),
    ).then_nodes(n1="IDLE")


def test_with_return_to_service_0_a_rebooted_node_stays_down_for_an_operator() -> None:
    config = "ReturnToService: 0\n"
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)), config=config)
    scenario.when(_register("n1")).then(
        state_changed("n1", "DOWN", "Node unexpectedly rebooted"),
        kill(J1, 1, "NODE_FAIL", ("n2",)),
        ended(J1, 1, "NODE_FAIL", "Node unexpectedly rebooted"),
    ).then_nodes(n1="DOWN")


def test_a_node_registering_again_while_a_requeue_awaits_its_epilog_counts_as_done() -> None:
    scenario = given(nodes("n", 3), running(J1, 1, ("n1", "n2", "n3"), spec(nodes_min=3)))
    scenario.when(node_failed("n1")).evolved()
    scenario.when(epilog(J1, 1, "n2")).evolved()
    scenario.when(_register("n3")).then(
        epilog_done(J1, 1, "n3", detail="Node re-registered"),
        requeued(J1, 1, "NODE_FAIL", begin_time_ms=AFTER_DELAY),
    ).then_nodes(n3="IDLE")


def test_a_node_down_for_not_responding_returns_when_it_registers() -> None:
    given(registered("n1"), state_changed("n1", "DOWN", "Not responding (no heartbeat)")).when(
        _register("n1")
    ).then(state_changed("n1", "IDLE")).then_nodes(n1="IDLE")


def test_an_operators_down_or_drain_survives_a_registration() -> None:
    given(registered("n1"), state_changed("n1", "DOWN", "fan")).when(_register("n1")).then_nothing()
    given(registered("n1"), state_changed("n1", "DRAIN", "fan")).when(
        _register("n1")
    ).then_nothing()


def test_a_drained_node_that_fails_keeps_its_drain_reason_and_stays_out() -> None:
    scenario = given(registered("n1"), state_changed("n1", "DRAIN", "bad DIMM"))
    scenario.when(NodeFailed(node_sluid=node_sluid("n1"), name="n1", reason="", time_ms=0)).then(
        state_changed("n1", "DOWN", "bad DIMM")
    ).evolved()
    scenario.when(_register("n1")).then_nothing()


def test_a_registration_sent_before_a_run_started_does_not_fail_that_run() -> None:
    # The shard placed J1 on n1 before it read n1's registration, sent by a daemon that had
    # just restarted: that daemon got the launch, nothing was lost (Slurm: only jobs started
    # before the node's boot are killed at a registration).
    facts = [*nodes("n", 2), *running(J1, 1, TWO, spec(nodes_min=2))]
    start_ms = given(*facts).state.jobs[J1].start_ms
    before = RegisterNode(node_sluid=node_sluid("n1"), name="n1", cpus=1, mem_mb=0,
                          boot_ms=start_ms)
    given(*facts).when(before).then_nothing()
    after = RegisterNode(node_sluid=node_sluid("n1"), name="n1", cpus=1, mem_mb=0,
                         boot_ms=start_ms + 1)
    given(*facts).when(after).then(
        state_changed("n1", "DOWN", "Node unexpectedly rebooted"),
        kill(J1, 1, "NODE_FAIL", ("n2",)),
        ended(J1, 1, "NODE_FAIL", "Node unexpectedly rebooted"),
        state_changed("n1", "IDLE"),
    )
