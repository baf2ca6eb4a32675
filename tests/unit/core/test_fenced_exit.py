"""A run fenced on a node daemon cut off from the broker (``ReportJobExit.fenced``,
docs/node-daemon.md "Fencing a cut-off daemon"): the shard ends a run it still holds as a node
failure, and a report of a run it already ended (the node went DOWN) changes nothing, so the
job is requeued once.

Given facts / when a request / then the exact facts, in order.
"""

from __future__ import annotations

from dataclasses import replace

from scheduler.records import Fact, JobQueued, JobStarted, ReportJobExit
from tests.unit.core.gwt import T0, given, nodes, spec
from tests.unit.core.requeue_fixtures import (
    AFTER_DELAY,
    EXPEDITE_ON,
    J1,
    ended,
    epilog,
    epilog_done,
    exited,
    expediting,
    kill,
    node_failed,
    requeued,
    running,
)
from tests.unit.core.test_foundation import state_changed

TWO = ("n1", "n2")
WHY = "NodeFenced: no heartbeat of node n1 was delivered for 7 s (cut off from the broker)"


def _fenced(job_id: int, name: str) -> ReportJobExit:
    return replace(exited(J1, job_id, name, 0, signal=9), fenced=True, detail=WHY)


def test_a_fenced_run_the_shard_still_holds_ends_node_fail_and_is_requeued() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(_fenced(1, "n1")).then(
        ended(J1, 1, "NODE_FAIL", WHY, signal=9),
    ).evolved()
    job = scenario.state.jobs[J1]
    assert (job.state, job.requeue_reason, job.completing) == ("COMPLETING", "NODE_FAIL", TWO)
    scenario.when(epilog(J1, 1, "n1")).then(epilog_done(J1, 1, "n1")).evolved()
    scenario.when(epilog(J1, 1, "n2")).then(
        epilog_done(J1, 1, "n2"),
        requeued(J1, 1, "NODE_FAIL", begin_time_ms=AFTER_DELAY),
    ).then_nodes(n1="IDLE", n2="IDLE")


def test_a_fenced_expedite_job_is_expedited_as_after_a_node_failure() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec(requeue="expedite")),
                     config=EXPEDITE_ON)
    scenario.when(_fenced(1, "n1")).then(
        ended(J1, 1, "NODE_FAIL", WHY, signal=9),
        expediting(J1, 1, "NODE_FAIL"),
    )


def test_the_fenced_report_of_a_run_ended_when_its_node_went_down_changes_nothing() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, TWO, spec(nodes_min=2)))
    scenario.when(node_failed("n1")).then(
        state_changed("n1", "DOWN", "Not responding"),
        kill(J1, 1, "NODE_FAIL", ("n2",)),
        ended(J1, 1, "NODE_FAIL", "Not responding"),
    ).evolved()
    scenario.when(_fenced(1, "n1")).then_nothing()
    scenario.when(epilog(J1, 1, "n2")).evolved()
    assert scenario.state.jobs[J1].restart_count == 1
    scenario.when(_fenced(1, "n1")).then_nothing()  # again, after the requeue


def test_an_unfenced_kill_by_signal_still_ends_failed() -> None:
    given(nodes("n", 1), running(J1, 1, ("n1",), spec())).when(
        exited(J1, 1, "n1", 0, signal=9)
    ).then(ended(J1, 1, "FAILED", signal=9))


def _running_with_limit(limit_s: int) -> list[Fact]:
    """J1 running on n1 with the time limit the shard resolved at queueing."""
    queued, started, *rest = running(J1, 1, ("n1",), spec())
    assert isinstance(queued, JobQueued)
    assert isinstance(started, JobStarted)
    return [replace(queued, time_limit_s=limit_s), replace(started, time_limit_s=limit_s), *rest]


def _timed_out_here(job_id: int, name: str) -> ReportJobExit:
    """The node's own kill at the limit (the shard's TIMEOUT kill did not come: it was down)."""
    return replace(exited(J1, job_id, name, 0, signal=15), detail="TIMEOUT")


def test_a_run_its_node_killed_at_its_limit_while_the_shard_was_away_ends_timeout() -> None:
    scenario = given(nodes("n", 1), _running_with_limit(60))
    scenario.when(_timed_out_here(1, "n1"), now_ms=T0 + 75_000).then(
        ended(J1, 1, "TIMEOUT", "TIMEOUT", signal=15),
    ).evolved()
    assert scenario.state.jobs[J1].state == "TIMEOUT"


def test_a_node_s_timeout_before_the_limit_by_the_shard_s_time_still_ends_failed() -> None:
    scenario = given(nodes("n", 1), _running_with_limit(60))
    scenario.when(_timed_out_here(1, "n1"), now_ms=T0 + 30_000).then(
        ended(J1, 1, "FAILED", "TIMEOUT", signal=15),
    )
