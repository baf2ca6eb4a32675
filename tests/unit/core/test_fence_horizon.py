"""A run's fence horizon (``LaunchRun.restart_after_ms``, docs/node-daemon.md "Fencing a cut-off
daemon"): how long after its node is declared DOWN the job could start elsewhere — 0 for the
expedite flag, the requeue delay for a requeueable job, -1 (never) for a job not requeued — and
the core never lets the job start elsewhere sooner than the horizon its run was launched with
(a requeue delay lowered while it runs, a begin time updated while it waits).

Given facts / when a request / then the exact facts, in order.
"""

from __future__ import annotations

import pytest

from scheduler import ConfigApplied, LaunchRun, UpdateJob, evolve, node_commands
from scheduler.config.cluster import parse_config
from scheduler.requeue.rules import restart_after_ms
from tests.unit.core.gwt import T0, M, given, nodes, queued, spec
from tests.unit.core.requeue_fixtures import (
    AFTER_DELAY,
    EXPEDITE_ON,
    J1,
    ended,
    epilog,
    epilog_done,
    node_failed,
    requeued,
    running,
)
from tests.unit.core.test_foundation import started, state_changed

DELAY_30 = "SchedulerParameters: requeue_delay=30\n"


@pytest.mark.parametrize(
    ("policy", "config", "horizon"),
    [("yes", "", 120_000), ("yes", DELAY_30, 30_000), ("expedite", EXPEDITE_ON, 0),
     ("no", "", -1), ("no", DELAY_30, -1)],
)
def test_the_horizon_per_requeue_policy(policy: str, config: str, horizon: int) -> None:
    assert restart_after_ms(policy, parse_config(config).requeue) == horizon


@pytest.mark.parametrize(
    ("requeue", "config", "horizon"),
    [("", "", 120_000), ("yes", DELAY_30, 30_000), ("expedite", EXPEDITE_ON, 0),
     ("no", "", -1), ("", "JobRequeue: 0\n", -1)],
)
def test_every_launch_of_a_run_carries_its_horizon(requeue: str, config: str,
                                                   horizon: int) -> None:
    scenario = given(nodes("n", 2), queued(J1, spec(nodes_min=2, requeue=requeue)),
                     config=config or None)
    fact = started(J1, 1, ("n1", "n2"))
    state = evolve(scenario.state, fact)
    launches = node_commands(state, fact)
    assert [type(c) for c in launches] == [LaunchRun, LaunchRun]
    assert [c.restart_after_ms for c in launches if isinstance(c, LaunchRun)] == [horizon] * 2
    assert state.jobs[J1].restart_after_ms == horizon


def _lowered(text: str) -> ConfigApplied:
    return ConfigApplied(**M, config_sluid="s0000000000009", kind="cluster", digest="",
                         text=text)


def test_a_requeue_delay_lowered_while_the_job_runs_waits_the_launched_horizon() -> None:
    # launched with 120 s: its part on a cut-off node lives until 120 s after the DOWN
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()),
                     _lowered("SchedulerParameters: requeue_delay=5\n"))
    assert scenario.state.config.requeue.requeue_delay_s == 5
    scenario.when(node_failed("n1")).then(
        state_changed("n1", "DOWN", "Not responding"),
        ended(J1, 1, "NODE_FAIL", "Not responding"),
        requeued(J1, 1, "NODE_FAIL", begin_time_ms=T0 + 120_000),
    )


def test_a_requeue_delay_raised_while_the_job_runs_applies() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec()),
                     _lowered("SchedulerParameters: requeue_delay=300\n"))
    scenario.when(node_failed("n1")).then(
        state_changed("n1", "DOWN", "Not responding"),
        ended(J1, 1, "NODE_FAIL", "Not responding"),
        requeued(J1, 1, "NODE_FAIL", begin_time_ms=T0 + 301_000),
    )


def test_the_next_run_is_launched_with_the_lowered_delay() -> None:
    scenario = given(nodes("n", 1), queued(J1, spec()),
                     _lowered("SchedulerParameters: requeue_delay=5\n"))
    fact = started(J1, 1, ("n1",))
    state = evolve(scenario.state, fact)
    launch = node_commands(state, fact)[0]
    assert isinstance(launch, LaunchRun) and launch.restart_after_ms == 5_000


def test_an_update_cannot_start_a_requeued_job_before_its_runs_horizon() -> None:
    scenario = given(nodes("n", 2), running(J1, 1, ("n1", "n2"), spec(nodes_min=2)))
    scenario.when(node_failed("n1")).evolved()
    scenario.when(epilog(J1, 1, "n2")).then(
        epilog_done(J1, 1, "n2"),
        requeued(J1, 1, "NODE_FAIL", begin_time_ms=AFTER_DELAY),
    ).evolved()
    assert scenario.state.jobs[J1].spec.begin_time_ms == AFTER_DELAY
    out = scenario.when(UpdateJob(job_sluid=J1, changes={"begin_time_ms": "0", "name": "x"}))
    out.evolved()
    job = scenario.state.jobs[J1]
    assert (job.spec.name, job.spec.begin_time_ms) == ("x", T0 + 120_000)
    # past the horizon the begin time is the user's
    later = scenario.when(UpdateJob(job_sluid=J1, changes={"begin_time_ms": "0"}),
                          now_ms=T0 + 120_000)
    later.evolved()
    assert scenario.state.jobs[J1].spec.begin_time_ms == 0


def test_an_expedite_job_is_eligible_at_once_as_before() -> None:
    scenario = given(nodes("n", 1), running(J1, 1, ("n1",), spec(requeue="expedite")),
                     config=EXPEDITE_ON)
    assert scenario.state.jobs[J1].restart_after_ms == 0
    out = scenario.when(node_failed("n1"))
    (fact,) = [f for f in out.facts if type(f).__name__ == "JobRequeued"]
    assert fact.begin_time_ms == 0  # type: ignore[attr-defined]
