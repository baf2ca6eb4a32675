"""Backfill does not seek a reservation again for a job that one it already failed for in the
pass dominates (``BackfillStage.unreservable``): the same facts, reservations and backfilled
jobs as seeking every one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler import ClusterConfig, JobSpec, SchedulerConfig, SubmitJob, initial_state
from scheduler.schedule import PassResult, schedule_with_plan
from scheduler.scheduling.backfill import BackfillStage
from scheduler.scheduling.profile import Profile
from tests.unit.core.gwt import sluid
from tests.unit.core.test_properties import Driver, history_settings, node_shapes, steps


def _seeking_every_reservation(run: Any) -> PassResult:
    original = BackfillStage._reserve

    def forgetful(stage: BackfillStage, job: Any, duration: int) -> None:
        stage.unreservable.clear()
        original(stage, job, duration)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BackfillStage, "_reserve", forgetful)
        result: PassResult = run()
    return result


def _counting_searches(run: Any) -> tuple[PassResult, int]:
    calls: list[int] = []
    original = Profile.earliest_start

    def counted(profile: Profile, *args: Any) -> Any:
        calls.append(1)
        return original(profile, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Profile, "earliest_start", counted)
        result: PassResult = run()
    return result, len(calls)


class FrontierDriver(Driver):
    """A short backfill window and some jobs without a time limit (reservations are missed
    often); each pass decided twice, with the frontier and seeking every reservation."""

    def __post_init__(self) -> None:
        config = ClusterConfig(scheduler=SchedulerConfig(policy=self.policy, bf_resolution_s=1,
                                                         bf_window_s=120))
        self.state = initial_state("prop", 5, config)
        for i, _ in enumerate(self.shapes):
            self.request(self._register(i))

    def step(self, step: tuple[Any, ...]) -> None:
        if step[0] == "submit" and step[4] > 200:  # no time limit: its nodes never free
            step = (*step[:4], 0, *step[5:])
        super().step(step)
        if step[0] == "submit":
            self.run_pass()

    def run_pass(self) -> None:
        every = _seeking_every_reservation(lambda: schedule_with_plan(self.state, self.now))
        result = schedule_with_plan(self.state, self.now)
        assert result.facts == every.facts
        assert (result.reservations, result.backfilled) == (every.reservations, every.backfilled)
        self.passes.append((None, result))
        self.apply(result.facts)


@history_settings(150)
@given(node_shapes, st.sampled_from(("easy", "conservative")), steps)
def test_skipping_dominated_reservations_decides_as_seeking_each(
    shapes: list[tuple[int, int]], policy: str, history: list[tuple[Any, ...]]
) -> None:
    FrontierDriver(shapes, policy).run(history)


def test_a_queue_behind_nodes_that_never_free_seeks_one_reservation_a_shape() -> None:
    config = ClusterConfig(scheduler=SchedulerConfig(policy="conservative"))
    driver = FrontierDriver.__new__(FrontierDriver)
    Driver.__init__(driver, [(1, 0), (1, 0)], "conservative")
    driver.state = initial_state("prop", 5, config)
    for i in range(2):
        driver.request(driver._register(i))
    for i in range(1, 3):  # both nodes busy for ever
        driver.request(SubmitJob(job_sluid=sluid(i, driver.now),
                                 spec=JobSpec(user="u", command=("x",))))
    driver.apply(schedule_with_plan(driver.state, driver.now).facts)
    assert len(driver.state.running) == 2
    for i in range(3, 103):  # 90 one-node jobs, then 10 of two nodes
        driver.request(SubmitJob(job_sluid=sluid(i, driver.now), spec=JobSpec(
            user="u", command=("x",), time_limit_s=60, nodes_min=1 if i < 93 else 2)))
    driver.now += 1000
    result, searches = _counting_searches(lambda: schedule_with_plan(driver.state, driver.now))
    every = _seeking_every_reservation(lambda: schedule_with_plan(driver.state, driver.now))
    assert searches == 1  # the two-node jobs are dominated by the one-node job's failure
    assert result.facts == every.facts and not result.reservations
    assert len(result.facts) == 100  # each queued job's first pending reason
