"""Backfill: EASY (one reservation) and conservative (a reservation per job), never delaying one."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler import JobPending, JobStarted
from scheduler.schedule import schedule_with_plan
from tests.unit.core.gwt import (
    T0,
    M,
    Scenario,
    given,
    node_sluid,
    nodes,
    queued,
    schedule_pass,
    sluid,
    spec,
)

S = 1000
FOUR_NODES = "SchedulerParameters: {{bf_policy: {policy}, bf_resolution: 1}}\n"
RUNNING, WIDE, SHORT, LONG = sluid(1), sluid(2), sluid(3), sluid(4)


def _running(job_sluid: str, names: tuple[str, ...], limit_s: int) -> JobStarted:
    return JobStarted(
        **M,
        job_sluid=job_sluid,
        job_id=1,
        run_sluid=sluid(500),
        restart_count=0,
        nodes=names,
        node_sluids=tuple(node_sluid(n) for n in names),
        partition="main",
        user="alice",
        time_limit_s=limit_s,
        submit_ms=T0,
    )


def _scenario(policy: str) -> Scenario:
    """n1-n3 busy until T0+100 s; a 4-node job waits; a 50 s and a 200 s one-node job follow."""
    return given(
        nodes("n", 4),
        queued(RUNNING, spec(nodes_min=3, time_limit_s=100)),
        _running(RUNNING, ("n1", "n2", "n3"), 100),
        queued(WIDE, spec(nodes_min=4, time_limit_s=100), time_ms=T0 + 1),
        queued(SHORT, spec(time_limit_s=50), time_ms=T0 + 2),
        queued(LONG, spec(time_limit_s=200), time_ms=T0 + 3),
        config=FOUR_NODES.format(policy=policy),
    )


def _started(facts: Sequence[object]) -> list[str]:
    return [f.job_sluid for f in facts if isinstance(f, JobStarted)]


def test_fcfs_starts_nothing_behind_a_blocked_job() -> None:
    result = schedule_with_plan(_scenario("fcfs").state, T0 + 10 * S)
    assert _started(result.facts) == []
    reasons = {f.job_sluid: f.reason for f in result.facts if isinstance(f, JobPending)}
    assert reasons == {WIDE: "Resources", SHORT: "Priority", LONG: "Priority"}


def test_easy_backfills_a_job_that_ends_before_the_reservation() -> None:
    result = schedule_with_plan(_scenario("easy").state, T0 + 10 * S)
    assert _started(result.facts) == [SHORT]
    assert result.reserved_starts == {WIDE: T0 + 100 * S}


def test_easy_does_not_start_a_job_that_would_delay_the_reservation() -> None:
    result = schedule_with_plan(_scenario("easy").state, T0 + 10 * S)
    assert LONG not in _started(result.facts)
    assert LONG not in result.reservations


def test_conservative_reserves_for_every_job_it_cannot_start() -> None:
    result = schedule_with_plan(_scenario("conservative").state, T0 + 10 * S)
    assert _started(result.facts) == [SHORT]
    assert result.reserved_starts == {WIDE: T0 + 100 * S, LONG: T0 + 200 * S}


def test_a_job_on_nodes_no_reservation_needs_may_run_past_the_reservation() -> None:
    outcome = given(
        nodes("n", 5),
        queued(RUNNING, spec(nodes_min=3, time_limit_s=100)),
        _running(RUNNING, ("n1", "n2", "n3"), 100),
        queued(WIDE, spec(nodes_min=4, time_limit_s=100), time_ms=T0 + 1),
        queued(LONG, spec(time_limit_s=200), time_ms=T0 + 3),
        config=FOUR_NODES.format(policy="easy"),
    )
    result = schedule_with_plan(outcome.state, T0 + 10 * S)
    [start] = [f for f in result.facts if isinstance(f, JobStarted)]
    assert start.job_sluid == LONG
    reserved_nodes = {"n1", "n2", "n3", "n4"}
    assert not reserved_nodes & set(start.nodes)


def test_backfill_considers_at_most_bf_max_job_test_jobs() -> None:
    config = "SchedulerParameters: {bf_policy: easy, bf_resolution: 1, bf_max_job_test: 1}\n"
    scenario = given(
        nodes("n", 4),
        queued(RUNNING, spec(nodes_min=3, time_limit_s=100)),
        _running(RUNNING, ("n1", "n2", "n3"), 100),
        queued(WIDE, spec(nodes_min=4, time_limit_s=100), time_ms=T0 + 1),
        queued(SHORT, spec(time_limit_s=50), time_ms=T0 + 2),
        config=config,
    )
    result = schedule_with_plan(scenario.state, T0 + 10 * S)
    assert _started(result.facts) == []
    assert result.reserved_starts == {WIDE: T0 + 100 * S}


def test_no_reservation_beyond_the_backfill_window() -> None:
    config = "SchedulerParameters: {bf_policy: easy, bf_resolution: 1, bf_window: 1}\n"
    scenario = given(
        nodes("n", 4),
        queued(RUNNING, spec(nodes_min=3, time_limit_s=100)),
        _running(RUNNING, ("n1", "n2", "n3"), 100),
        queued(WIDE, spec(nodes_min=4, time_limit_s=100), time_ms=T0 + 1),
        config=config,
    )
    assert schedule_with_plan(scenario.state, T0 + 10 * S).reserved_starts == {}


def test_expected_ends_are_rounded_up_to_the_resolution() -> None:
    config = "SchedulerParameters: {bf_policy: easy, bf_resolution: 60}\n"
    scenario = given(
        nodes("n", 4),
        queued(RUNNING, spec(nodes_min=3, time_limit_s=100)),
        _running(RUNNING, ("n1", "n2", "n3"), 100),
        queued(WIDE, spec(nodes_min=4, time_limit_s=100), time_ms=T0 + 1),
        config=config,
    )
    [start] = schedule_with_plan(scenario.state, T0 + 10 * S).reserved_starts.values()
    assert start >= T0 + 100 * S and start % 60_000 == 0 and start - (T0 + 100 * S) < 60_000


def test_a_job_pinned_to_a_down_node_does_not_keep_unpinned_jobs_of_its_shape_waiting() -> None:
    """A job limited to a DOWN node (``-w``) fails to fit; jobs of the same shape that may run
    anywhere are not "dominated" by that failure (found on ``sluice up``: a ``-w node02`` job
    while node02 was DOWN kept a burst of 60 one-node jobs pending on three idle nodes)."""
    from tests.unit.core.test_foundation import state_changed

    for policy in ("easy", "conservative"):
        pinned, free = sluid(5), sluid(6)
        scenario = given(nodes("n", 3), state_changed("n2", "DOWN", "Not responding"),
                         queued(pinned, spec(nodelist="n2"), time_ms=T0 + 1),
                         queued(free, spec(), time_ms=T0 + 2),
                         config=FOUR_NODES.format(policy=policy))
        started = [f.job_sluid for f in scenario.when(schedule_pass()).facts
                   if isinstance(f, JobStarted)]
        assert started == [free], policy
