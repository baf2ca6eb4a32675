"""ReturnToService 0/1/2, NodeResponding and the mass-failure guard (NodeSuspected)."""

from __future__ import annotations

import pytest

from scheduler import (
    ConfigError,
    DrainNode,
    JobStarted,
    NodeFailed,
    NodeResponding,
    NodeSuspected,
    RegisterNode,
    parse_config,
)
from scheduler.commands import node_commands
from scheduler.evolve import evolve
from tests.unit.core.gwt import T0, M, given, node_sluid, nodes, queued, schedule_pass, spec
from tests.unit.core.requeue_fixtures import (
    J1,
    J2,
    epilog,
    exited,
    kill,
    node_failed,
    run_of,
    running,
)
from tests.unit.core.test_foundation import state_changed

NOT_RESPONDING = "Not responding (no heartbeat for 10.2 s)"


def _rts(mode: int) -> str:
    return f"ReturnToService: {mode}\n"


def _responding(name: str, *runs: str) -> NodeResponding:
    return NodeResponding(node_sluid=node_sluid(name), name=name, runs=runs, time_ms=T0)


def _register(name: str) -> RegisterNode:
    return RegisterNode(node_sluid=node_sluid(name), name=name, cpus=1, mem_mb=0)


def _silent(name: str, silent: int, watched: int) -> NodeFailed:
    return NodeFailed(node_sluid=node_sluid(name), name=name, reason="no heartbeat for 10.2 s",
                      time_ms=T0, silent_nodes=silent, watched_nodes=watched)


def _suspected(name: str, silent: int, watched: int) -> NodeSuspected:
    return NodeSuspected(
        **M, node_sluid=node_sluid(name), name=name, silent_nodes=silent, watched_nodes=watched,
        reason=f"Suspected partition: {silent} of {watched} nodes silent at once "
               "(no heartbeat for 10.2 s)",
    )


# -- configuration ---------------------------------------------------------------------------


def test_return_to_service_defaults_to_1_and_the_guard_share_to_a_half() -> None:
    config = parse_config("")
    assert config.health.return_to_service == 1
    assert config.health.failure_guard_share == 0.5
    tuned = parse_config("ReturnToService: 2\nNodeFailureGuardShare: 0.25\n")
    assert (tuned.health.return_to_service, tuned.health.failure_guard_share) == (2, 0.25)


@pytest.mark.parametrize(("text", "message"), [
    ("ReturnToService: 3\n", "ReturnToService must be 0, 1 or 2, not 3"),
    ("ReturnToService: -1\n", "ReturnToService must be at least 0"),
    ("ReturnToService: yes\n", "ReturnToService must be a whole number"),
    ("NodeFailureGuardShare: 1.5\n", "NodeFailureGuardShare must be a share from 0 to 1"),
    ("NodeFailureGuardShare: -0.1\n", "NodeFailureGuardShare must be a finite number"),
    ("NodeFailureGuardShare: half\n", "NodeFailureGuardShare must be a number"),
])
def test_a_bad_health_key_is_a_config_error_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_config("ClusterName: lab\n" + text, "cluster.yaml")
    assert "cluster.yaml:2:" in str(info.value)


# -- a DOWN node answers again ---------------------------------------------------------------


def test_a_node_down_for_not_responding_returns_when_its_heartbeats_resume() -> None:
    down = given(nodes("n", 2), state_changed("n1", "DOWN", NOT_RESPONDING))
    down.when(_responding("n1")).then(state_changed("n1", "IDLE")).then_nodes(n1="IDLE")


def test_a_node_down_for_not_responding_returns_on_a_cluster_requiring_credentials() -> None:
    """The health agent's NodeResponding carries no credential (the shell accepts it only
    sealed by the health agent, as NodeFailed): AuthRequired must not refuse it, or a paused
    daemon stays DOWN for good (found by SIGSTOP/SIGCONT of a node of ``sluice up``)."""
    down = given(nodes("n", 2), state_changed("n1", "DOWN", NOT_RESPONDING),
                 config="AuthRequired: true\n")
    down.when(_responding("n1")).then(state_changed("n1", "IDLE")).then_nodes(n1="IDLE")


def test_a_node_answering_again_while_in_service_decides_nothing() -> None:
    given(nodes("n", 2)).when(_responding("n1")).then_nothing()
    given(nodes("n", 2)).when(_responding("n9")).then_nothing()


def test_return_to_service_0_keeps_every_down_node_down_until_resumed() -> None:
    for reason in (NOT_RESPONDING, "Node unexpectedly rebooted"):
        down = given(nodes("n", 1), state_changed("n1", "DOWN", reason), config=_rts(0))
        down.when(_responding("n1")).then_nothing()
        down.when(_register("n1")).then_nothing()


def test_return_to_service_1_keeps_an_operators_down_and_a_drain() -> None:
    operator = given(nodes("n", 1), state_changed("n1", "DOWN", "fan"), config=_rts(1))
    operator.when(_responding("n1")).then_nothing()
    operator.when(_register("n1")).then_nothing()
    drained = given(nodes("n", 1), state_changed("n1", "DRAIN", "bad DIMM"), config=_rts(1))
    drained.when(_responding("n1")).then_nothing()


def test_return_to_service_1_returns_an_unexpected_reboot_on_registration_as_before() -> None:
    rebooted = given(nodes("n", 1), state_changed("n1", "DOWN", "Node unexpectedly rebooted"))
    rebooted.when(_register("n1")).then(state_changed("n1", "IDLE"))


def test_return_to_service_2_returns_any_system_down_but_not_an_operators() -> None:
    for reason in (NOT_RESPONDING, "Node unexpectedly rebooted"):
        down = given(nodes("n", 1), state_changed("n1", "DOWN", reason), config=_rts(2))
        down.when(_responding("n1")).then(state_changed("n1", "IDLE"))
    operator = given(nodes("n", 1), state_changed("n1", "DOWN", "fan"), config=_rts(2))
    operator.when(_responding("n1")).then_nothing()
    operator.when(_register("n1")).then_nothing()


def test_a_node_no_longer_in_the_configuration_does_not_return() -> None:
    config = "Nodes:\n  - NodeName: n2\n    CPUs: 1\n"
    down = given(nodes("n", 2), state_changed("n1", "DOWN", NOT_RESPONDING), config=config)
    down.when(_responding("n1")).then_nothing()


def test_a_confirmed_down_returns_as_not_responding_when_it_answers() -> None:
    down = given(nodes("n", 1), state_changed("n1", "DOWN", "Not responding (confirmed by root)"))
    down.when(_responding("n1")).then(state_changed("n1", "IDLE"))


def test_a_returning_node_does_not_resurrect_the_run_it_lost_and_kills_what_is_left() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    failed = scenario.when(node_failed("n1"))
    kills = []
    for fact in failed.facts:  # each fact's commands from the state after it, as the shell does
        kills += node_commands(evolve(scenario.state, fact), fact)
    # the failure already sent TERMINATE for the lost run to the failed node itself
    assert ("n1", run_of(1), "TERMINATE") in {(k.node_name, k.run_sluid, k.reason) for k in kills}
    back = scenario.when(_responding("n1", run_of(1)))
    back.then(state_changed("n1", "IDLE"), kill(J1, 1, "TERMINATE", ("n1",)))
    state = back.evolved()
    assert state.jobs[J1].run_sluid in ("", run_of(1))
    assert not state.jobs[J1].is_running
    assert J1 not in state.running


def test_a_run_the_shard_still_holds_there_is_not_killed() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    scenario.when(_responding("n1", run_of(1))).then_nothing()


def test_a_stale_run_is_killed_on_that_node_alone_without_touching_the_job() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    scenario.when(node_failed("n1")).evolved()
    outcome = scenario.when(_responding("n1", run_of(1)))
    [stale] = outcome.matching(type(kill(J1, 1, "TERMINATE", ("n1",))))
    before = scenario.state.jobs[J1]
    evolve(scenario.state, stale)
    assert scenario.state.jobs[J1] == before
    commands = node_commands(scenario.state, stale)
    assert [(c.node_name, c.run_sluid, c.reason) for c in commands] == [
        ("n1", run_of(1), "TERMINATE")
    ]


# -- the mass-failure guard ------------------------------------------------------------------


def test_more_than_the_guard_share_silent_at_once_is_a_suspected_partition_not_a_failure() -> None:
    scenario = given(nodes("n", 8), running(J1, 1, ("n1",), spec()))
    scenario.when(_silent("n1", 5, 8)).then(_suspected("n1", 5, 8)).evolved()
    assert scenario.state.nodes[node_sluid("n1")].suspect.startswith("Suspected partition")
    assert scenario.state.jobs[J1].is_running  # no requeue until confirmed
    scenario.when(_silent("n1", 5, 8)).then_nothing()  # reported again: suspected once


def test_up_to_the_share_or_a_single_node_is_a_failure() -> None:
    given(nodes("n", 8)).when(_silent("n1", 4, 8)).then(state_changed("n1", "DOWN", NOT_RESPONDING))
    given(nodes("n", 1)).when(_silent("n1", 1, 1)).then(state_changed("n1", "DOWN", NOT_RESPONDING))
    given(nodes("n", 2)).when(_silent("n1", 1, 0)).then(state_changed("n1", "DOWN", NOT_RESPONDING))


def test_the_guard_share_comes_from_the_configuration() -> None:
    strict = given(nodes("n", 8), config="NodeFailureGuardShare: 0.25\n")
    strict.when(_silent("n1", 3, 8)).then(_suspected("n1", 3, 8))
    off = given(nodes("n", 8), config="NodeFailureGuardShare: 1\n")
    off.when(_silent("n1", 8, 8)).then(state_changed("n1", "DOWN", NOT_RESPONDING))


def test_a_suspected_node_gets_no_new_work_but_keeps_its_runs() -> None:
    scenario = given(nodes("n", 2), _suspected("n1", 2, 2), queued(J2, job_id=2))
    [start] = scenario.when(schedule_pass()).matching(JobStarted)
    assert start.nodes == ("n2",)


def test_a_suspicion_ends_when_the_node_answers_and_it_takes_work_again() -> None:
    scenario = given(nodes("n", 1), _suspected("n1", 2, 2), queued(J2, job_id=2))
    scenario.when(_responding("n1")).then(state_changed("n1", "IDLE")).evolved()
    assert not scenario.state.nodes[node_sluid("n1")].suspect
    [start] = scenario.when(schedule_pass()).matching(JobStarted)
    assert start.nodes == ("n1",)


def test_a_suspected_node_that_registers_again_is_no_longer_suspected() -> None:
    scenario = given(nodes("n", 1), _suspected("n1", 2, 2))
    scenario.when(_register("n1")).then(state_changed("n1", "IDLE")).evolved()
    assert not scenario.state.nodes[node_sluid("n1")].suspect


def test_an_operator_confirms_a_suspected_node_down_and_its_runs_are_requeued() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()), _suspected("n1", 2, 2))
    confirm = DrainNode(name="n1", reason="Not responding (confirmed down by root)", down=True,
                        user="root")
    outcome = scenario.when(confirm)
    assert (outcome.facts[0].state, outcome.facts[0].reason) == (  # type: ignore[union-attr]
        "DOWN", "Not responding (confirmed down by root)")
    state = outcome.evolved()
    assert state.nodes[node_sluid("n1")].state == "DOWN"
    assert not state.nodes[node_sluid("n1")].suspect
    assert not state.jobs[J1].is_running


def test_a_later_report_under_the_share_takes_a_suspected_node_down() -> None:
    scenario = given(nodes("n", 8), _suspected("n1", 5, 8))
    scenario.when(_silent("n1", 1, 8)).then(state_changed("n1", "DOWN", NOT_RESPONDING))


def test_the_returning_daemons_late_reports_of_the_lost_run_change_nothing() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()))
    scenario.when(node_failed("n1")).evolved()
    scenario.when(_responding("n1", run_of(1))).evolved()
    before = scenario.state.jobs[J1]
    scenario.when(exited(J1, 1, "n1", 143)).then_nothing()
    scenario.when(epilog(J1, 1, "n1")).then_nothing()
    assert scenario.state.jobs[J1] == before


# -- a node whose daemon takes no commands (its state directory is full or read-only) ----------

FULL = "no space left on device"
PAUSED = "State directory no space left on device: commands paused"


def _paused(name: str, paused: str, answers: bool = False) -> NodeResponding:
    return NodeResponding(node_sluid=node_sluid(name), name=name, runs=(), time_ms=T0,
                          answers=answers, paused=paused)


def _pause_suspected(name: str, reason: str = PAUSED) -> NodeSuspected:
    return NodeSuspected(**M, node_sluid=node_sluid(name), name=name, reason=reason,
                         silent_nodes=0, watched_nodes=0)


def test_a_paused_node_gets_no_new_work_keeps_its_runs_and_takes_work_again_when_it_resumes(
) -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1",), spec()), queued(J2, job_id=2))
    scenario.when(_paused("n1", FULL)).then(_pause_suspected("n1")).evolved()
    node = scenario.state.nodes[node_sluid("n1")]
    assert node.suspect == PAUSED
    assert node.state != "DRAIN" and scenario.state.jobs[J1].is_running  # not drained
    [start] = scenario.when(schedule_pass()).matching(JobStarted)
    assert start.nodes == ("n2",)  # no new work on the paused node
    assert scenario.when(_paused("n1", FULL)).facts == []  # said once
    assert scenario.when(_paused("n1", FULL, answers=True)).facts == []  # nor when answering
    scenario.when(_paused("n1", "")).then(state_changed("n1", node.state)).evolved()
    assert not scenario.state.nodes[node_sluid("n1")].suspect


def test_a_node_that_answers_again_paused_returns_to_service_suspected() -> None:
    scenario = given(nodes("n", 1), state_changed("n1", "DOWN", NOT_RESPONDING))
    scenario.when(_paused("n1", "read-only file system", answers=True)).then(
        state_changed("n1", "IDLE"),
        _pause_suspected("n1", "State directory read-only file system: commands paused"))


def test_a_partition_suspicion_of_a_node_that_answers_paused_becomes_the_pauses() -> None:
    scenario = given(nodes("n", 2), _suspected("n1", 2, 2))
    scenario.when(_paused("n1", FULL, answers=True)).then(_pause_suspected("n1"))
    # a partition's suspicion does not end by a forward that is not an answer
    assert given(nodes("n", 2), _suspected("n1", 2, 2)).when(_paused("n1", "")).facts == []
