"""A run's end in one report: ``ReportJobExit(epilog_done=True)`` is also the reporting node's
``ReportEpilog(ok)`` (docs/node-daemon.md, "A run's end in one report").

Given facts / when a request / then the exact facts, in order.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from scheduler import RequeueJob, evolve, node_commands
from scheduler.records import KillRun, NodeCommand, ReportJobExit
from tests.unit.core.gwt import Outcome, Scenario, given, nodes, spec
from tests.unit.core.requeue_fixtures import (
    AFTER_DELAY,
    EXPEDITE_ON,
    J1,
    ended,
    epilog,
    epilog_done,
    exited,
    kill,
    prolog_failed,
    requeued,
    running,
)
from tests.unit.core.test_foundation import state_changed

TWO = ("n1", "n2")


def _done(report: ReportJobExit) -> ReportJobExit:
    return replace(report, epilog_done=True)


def _commands(scenario: Scenario, outcome: Outcome) -> list[NodeCommand]:
    """The node commands of the outcome's facts, each from the state after it (as the shell),
    on a copy of the scenario's state (call it before the outcome is folded)."""
    state, commands = copy.deepcopy(scenario.state), []
    for fact in outcome.facts:
        state = evolve(state, fact)
        commands += node_commands(state, fact)
    return commands


def test_a_run_that_ends_for_good_decides_what_the_exit_alone_decides() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()))
    outcome = scenario.when(_done(exited(J1, 1, "n1", 0)))
    # the node still gets its TERMINATE: it is the answer its end report waits for
    [terminate] = _commands(scenario, outcome)
    outcome.then(ended(J1, 1, "COMPLETED")).then_nodes(n1="IDLE")
    assert isinstance(terminate, KillRun) and terminate.reason == "TERMINATE"


def test_a_requeue_waiting_for_the_only_node_completes_in_the_exit_s_decision() -> None:
    one_report = given(nodes("n", 1), running(J1, 1, ("n1",), spec()))
    one_report.when(RequeueJob(job_sluid=J1, hold=True)).evolved()
    outcome = one_report.when(_done(exited(J1, 1, "n1", 0, signal=15)))
    [terminate] = _commands(one_report, outcome)
    outcome.then(
        ended(J1, 1, "REQUEUED", signal=15),
        epilog_done(J1, 1, "n1"),
        requeued(J1, 1, "ADMIN", held=True, begin_time_ms=AFTER_DELAY),
    ).then_nodes(n1="IDLE")
    state = outcome.evolved()
    assert isinstance(terminate, KillRun) and terminate.reason == "TERMINATE"

    two_reports = given(nodes("n", 1), running(J1, 1, ("n1",), spec()))
    two_reports.when(RequeueJob(job_sluid=J1, hold=True)).evolved()
    two_reports.when(exited(J1, 1, "n1", 0, signal=15)).evolved()
    two_reports.when(epilog(J1, 1, "n1")).evolved()
    # the same job as after the exit and the epilog reported apart
    assert state.jobs[J1] == two_reports.state.jobs[J1]


def test_an_expedite_job_s_nonzero_exit_waits_only_for_the_other_nodes() -> None:
    scenario = given(
        nodes("n", 2),
        running(J1, 1, TWO, spec(nodes_min=2, requeue="expedite")),
        config=EXPEDITE_ON,
    )
    scenario.when(_done(exited(J1, 1, "n1", 3))).then(
        ended(J1, 1, "FAILED", exit_code=3),
        epilog_done(J1, 1, "n1"),
    ).evolved()  # an expedite job keeps its nodes until its requeue
    job = scenario.state.jobs[J1]
    assert (job.state, job.completing) == ("COMPLETING", ("n2",))
    scenario.when(epilog(J1, 1, "n2")).then(
        epilog_done(J1, 1, "n2"),
        requeued(J1, 1, "EXIT_NONZERO", held=True, begin_time_ms=0),
    ).then_nodes(n2="IDLE")


def test_the_report_of_a_run_already_ended_otherwise_still_counts_as_its_epilog() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(prolog_failed(J1, 1, "n2")).then(
        state_changed("n2", "DRAIN", "Prolog error"),
        kill(J1, 1, "PROLOG_FAILED", TWO),
        ended(J1, 1, "REQUEUED", "Prolog error on n2: prolog exited 1", exit_code=1),
    ).evolved()
    scenario.when(exited(J1, 1, "n1", 0)).then_nothing()  # without the flag: nothing
    scenario.when(_done(exited(J1, 1, "n1", 0))).then(epilog_done(J1, 1, "n1")).evolved()
    # again (a replay, a re-send): the node is no longer awaited
    scenario.when(_done(exited(J1, 1, "n1", 0))).then_nothing()
    scenario.when(epilog(J1, 1, "n2")).then(
        epilog_done(J1, 1, "n2"),
        requeued(J1, 1, "PROLOG_FAILED", held=True, begin_time_ms=AFTER_DELAY),
    )


def test_only_the_batch_host_s_report_counts() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(prolog_failed(J1, 1, "n1")).evolved()
    # n2 is not the batch host: its exit report (forged or stale) decides nothing
    scenario.when(_done(exited(J1, 1, "n2", 0))).then_nothing()
    assert scenario.state.jobs[J1].completing == TWO


def test_a_report_of_another_run_or_after_the_requeue_decides_nothing() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()))
    scenario.when(RequeueJob(job_sluid=J1)).evolved()
    scenario.when(_done(exited(J1, 1, "n1", 0, signal=15))).evolved()
    assert scenario.state.jobs[J1].state == "PENDING"
    scenario.when(_done(exited(J1, 1, "n1", 0, signal=15))).then_nothing()
    other = replace(_done(exited(J1, 1, "n1", 0)), run_sluid="s0000000000XYZ")
    scenario.when(other).then_nothing()
