"""Priority (Slurm's multifactor formula) and queue order (sort_job_queue2)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from scheduler import HoldJob, JobStarted, ReleaseJob
from scheduler.scheduling.priority import ordered_queue, priorities
from tests.unit.core.gwt import T0, given, nodes, queued, schedule_pass, sluid, spec

DAY_MS = 86_400_000


def _first_started(outcome_facts: Sequence[object]) -> str:
    return next(f.job_sluid for f in outcome_facts if isinstance(f, JobStarted))


def test_with_all_weights_zero_every_priority_is_one_and_the_queue_is_fifo() -> None:
    state = given(queued(sluid(2), time_ms=T0 + 5), queued(sluid(1), time_ms=T0 + 9)).state
    jobs, prios = ordered_queue(state, T0 + 10)
    assert [j.job_sluid for j in jobs] == [sluid(2), sluid(1)]
    assert prios.tolist() == [1, 1]


def test_equal_submit_times_are_ordered_by_job_id_as_slurm_does() -> None:
    """One batch queues jobs in the same millisecond; the lower job id (queued first) goes first,
    whatever their SLUIDs (clients' SLUIDs need not grow in the order the shard reads them)."""
    state = given(queued(sluid(9)), queued(sluid(3)), queued(sluid(5))).state
    jobs, _ = ordered_queue(state, T0)
    assert [j.job_sluid for j in jobs] == [sluid(9), sluid(3), sluid(5)]
    assert [j.job_id for j in jobs] == [1, 2, 3]


def test_age_factor_grows_to_max_age_and_is_weighted() -> None:
    config = "PriorityWeightAge: 1000\nPriorityMaxAge: 1-0\n"
    state = given(queued(sluid(1)), queued(sluid(2), time_ms=T0 + DAY_MS // 2), config=config).state
    jobs, _ = ordered_queue(state, T0 + DAY_MS)
    assert priorities(state, jobs, T0 + DAY_MS).tolist() == [1000, 500]
    assert priorities(state, jobs, T0 + 5 * DAY_MS).tolist() == [1000, 1000]


def test_nice_lowers_priority_and_a_held_job_has_priority_zero() -> None:
    config = "PriorityWeightQOS: 100\nQOS:\n  - Name: q\n    Priority: 10\n"
    state = given(
        queued(sluid(1), spec(qos="q", nice=30)),
        queued(sluid(2), spec(qos="q")),
        queued(sluid(3), spec(qos="q", hold=True)),
        config=config,
    ).state
    jobs, prios = ordered_queue(state, T0)
    by_job = dict(zip([j.job_sluid for j in jobs], prios.tolist(), strict=True))
    assert by_job == {sluid(1): 70, sluid(2): 100, sluid(3): 0}


def test_higher_priority_runs_first_even_if_submitted_later() -> None:
    config = (
        "PriorityWeightQOS: 1000\nQOS:\n  - Name: low\n    Priority: 1\n"
        "  - Name: high\n    Priority: 10\n"
    )
    outcome = given(
        nodes("n", 1),
        queued(sluid(1), spec(qos="low")),
        queued(sluid(2), spec(qos="high"), time_ms=T0 + 1),
        config=config,
    ).when(schedule_pass(), T0 + 2)
    assert _first_started(outcome.facts) == sluid(2)


def test_partition_priority_tier_beats_priority() -> None:
    config = """
PriorityWeightQOS: 1000
QOS:
  - Name: high
    Priority: 10
Partitions:
  - PartitionName: low
    Default: YES
  - PartitionName: top
    PriorityTier: 5
"""
    state = given(
        queued(sluid(1), spec(qos="high")), queued(sluid(2), spec(partition="top")), config=config
    ).state
    jobs, _ = ordered_queue(state, T0)
    assert [j.job_sluid for j in jobs] == [sluid(2), sluid(1)]


def test_an_expediting_job_sorts_before_all_others() -> None:
    state = given(queued(sluid(1)), queued(sluid(2), time_ms=T0 + 1)).state
    job = state.jobs[sluid(2)]
    state.jobs[sluid(2)] = dataclasses.replace(job, expediting=True)  # the requeue work's flag
    state.track(state.jobs[sluid(2)])  # as evolve files a requeued job
    jobs, _ = ordered_queue(state, T0 + 2)
    assert [j.job_sluid for j in jobs] == [sluid(2), sluid(1)]


def test_job_size_factor_favours_large_jobs_unless_favor_small() -> None:
    large = "PriorityWeightJobSize: 1000\n"
    state = given(
        nodes("n", 4), queued(sluid(1), spec(nodes_min=4)), queued(sluid(2)), config=large
    ).state
    jobs, _ = ordered_queue(state, T0)
    assert priorities(state, jobs, T0).tolist() == [1000, 250]
    small = large + "PriorityFavorSmall: YES\n"
    state = given(
        nodes("n", 4), queued(sluid(1), spec(nodes_min=4)), queued(sluid(2)), config=small
    ).state
    jobs, _ = ordered_queue(state, T0)
    assert [j.job_sluid for j in jobs] == [sluid(2), sluid(1)]
    assert priorities(state, jobs, T0).tolist() == [750, 1]


def test_the_state_knows_which_pending_jobs_leave_first_come_order() -> None:
    scenario = given(queued(sluid(1)), queued(sluid(2), spec(nice=5)), queued(sluid(3)))
    assert scenario.state.out_of_order == {sluid(2)}
    scenario.when(HoldJob(job_sluid=sluid(1))).evolved()
    assert scenario.state.out_of_order == {sluid(1), sluid(2)}
    scenario.when(ReleaseJob(job_sluid=sluid(1))).evolved()
    assert scenario.state.out_of_order == {sluid(2)}
