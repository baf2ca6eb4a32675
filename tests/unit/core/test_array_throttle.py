"""``scontrol update JobId=ARRAY ArrayTaskThrottle=N`` (the change ``array=%N``): the array's
pending tasks take the new limit on running tasks (0: none), and so do its running tasks
(``JobDetailsChanged``: Slurm keeps one limit for the whole array, and a running task requeued
later keeps the array's limit, not the one it started with); its ended tasks are left alone
without a refusal, and nothing but the ``%N`` may change. Before, ``array`` could not change at
all and the CLI did not know the name (found 2026-12-07)."""

from __future__ import annotations

from scheduler import JobQueued, JobRejected, JobStarted, UpdateJob, evolve, schedule
from scheduler.records import JobDetailsChanged
from tests.unit.core.gwt import given, nodes, queued, sluid, spec, started

ARRAY = sluid(100)
TASKS = [sluid(i) for i in range(1, 5)]


def _array(text: str = "1-4%1") -> list[JobQueued]:
    return [queued(s, spec(array=text), array_job_sluid=ARRAY, array_task_id=i + 1)
            for i, s in enumerate(TASKS)]


def test_the_pending_tasks_take_the_new_throttle_and_more_of_them_start() -> None:
    scenario = given(nodes("n", 4), *_array(), started(TASKS[0], ("n1",), 0, 1))
    facts = scenario.when(UpdateJob(job_sluid=ARRAY, changes={"array": "%3"})).facts
    assert [type(f) for f in facts] == [JobDetailsChanged] + [JobQueued] * 3
    assert {f.spec.array for f in facts if isinstance(f, JobQueued)} == {"1-4%3"}
    state = scenario.state
    for fact in facts:
        state = evolve(state, fact)
    assert len([f for f in schedule(state, 0) if isinstance(f, JobStarted)]) == 2


def test_a_running_task_takes_the_arrays_new_throttle_too() -> None:
    scenario = given(nodes("n", 4), *_array(), started(TASKS[0], ("n1",), 0, 1))
    [details, *_] = scenario.when(UpdateJob(job_sluid=ARRAY, changes={"array": "%2"})).facts
    assert isinstance(details, JobDetailsChanged)
    assert (details.job_sluid, details.array, details.changed) == (TASKS[0], "1-4%2", ("array",))
    assert evolve(scenario.state, details).jobs[TASKS[0]].spec.array == "1-4%2"


def test_zero_lifts_the_limit() -> None:
    facts = given(nodes("n", 1), *_array()).when(
        UpdateJob(job_sluid=ARRAY, changes={"array": "%0"})).facts
    assert {f.spec.array for f in facts if isinstance(f, JobQueued)} == {"1-4"}


def test_only_the_throttle_may_change() -> None:
    for changes in ({"array": "%x"}, {"array": "1-9"}, {"array": "%-1"}):
        facts = given(nodes("n", 1), *_array()).when(
            UpdateJob(job_sluid=ARRAY, changes=changes)).facts
        assert facts and all(isinstance(f, JobRejected) and f.reason == "InvalidUpdate"
                             for f in facts), changes
    [fact] = given(nodes("n", 1), queued(sluid(9))).when(
        UpdateJob(job_sluid=sluid(9), changes={"array": "%2"})).facts
    assert isinstance(fact, JobRejected) and "no array task" in fact.detail
