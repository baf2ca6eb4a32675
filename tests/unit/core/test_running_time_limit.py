"""``scontrol update JobId=N TimeLimit=…`` of a running job: who may, what the run then does."""

from __future__ import annotations

from scheduler import CancelJob, JobRejected, RunKillRequested, UpdateJob, evolve, node_commands
from scheduler.records import SetRunLimit, TimeLimitChanged
from tests.unit.core.gwt import T0, M, given, nodes, queued, schedule_pass, sluid, started

J1 = sluid(1)
RUN = sluid(501)
OPS = "Operators: [olga]\n"


def _running(limit_s: int = 600) -> tuple:
    return (nodes("n", 2), queued(J1), started(J1, ("n1", "n2"), limit_s, 1))


def _update(user: str, value: str, **extra: str) -> UpdateJob:
    return UpdateJob(job_sluid=J1, user=user, changes={"time_limit_s": value, **extra})


def test_an_operator_raises_the_time_limit_of_a_running_job() -> None:
    given(*_running(), config=OPS).when(_update("olga", "3600")).then(
        TimeLimitChanged(**M, job_sluid=J1, run_sluid=RUN, nodes=("n1", "n2"),
                         time_limit_s=3600, previous_s=600, requester="olga"))


def test_the_owner_may_lower_it_but_not_raise_it_nor_make_it_unlimited() -> None:
    scenario = given(*_running(), config=OPS)
    [lowered] = scenario.when(_update("alice", "300")).facts
    assert isinstance(lowered, TimeLimitChanged) and lowered.time_limit_s == 300
    for value in ("900", "0"):
        [refused] = scenario.when(_update("alice", value)).facts
        assert isinstance(refused, JobRejected), value
        assert refused.reason == "AccessDenied"
        assert refused.detail.startswith("Access/permission denied: alice may lower")


def test_an_unlimited_running_job_can_only_be_limited_by_its_owner() -> None:
    scenario = given(*_running(0))
    [fact] = scenario.when(_update("alice", "60")).facts
    assert isinstance(fact, TimeLimitChanged) and (fact.previous_s, fact.time_limit_s) == (0, 60)


def test_another_user_may_not_touch_it_and_the_same_limit_is_no_change() -> None:
    scenario = given(*_running(), config=OPS)
    [refused] = scenario.when(_update("mallory", "60")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "AccessDenied"
    scenario.when(_update("alice", "600")).then_nothing()


def test_a_field_slurm_changes_only_while_pending_is_refused_for_a_running_job() -> None:
    """A field Slurm changes only while pending (Nice= it changes while running too)."""
    [refused] = given(*_running(), config=OPS).when(_update("olga", "60", qos="high")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "JobNotPending"
    assert refused.detail.startswith("Job is no longer pending execution")
    assert "qos" in refused.detail


def test_a_job_being_killed_cannot_change_its_limit() -> None:
    scenario = given(*_running(), config=OPS)
    state = scenario.state
    for fact in scenario.when(CancelJob(job_sluid=J1)).facts:
        state = evolve(state, fact)
    [refused] = scenario.when(_update("olga", "3600")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "JobFinished"
    assert refused.detail.startswith("Job has already finished")


def test_the_run_times_out_at_the_new_limit_not_the_old_one() -> None:
    scenario = given(*_running(600), config=OPS)
    [raised] = scenario.when(_update("olga", "1200")).facts
    scenario.state = evolve(scenario.state, raised)
    assert not scenario.when(schedule_pass(), T0 + 700_000).matching(RunKillRequested)
    [kill] = scenario.when(schedule_pass(), T0 + 1_200_000).matching(RunKillRequested)
    assert kill.reason == "TIMEOUT" and kill.run_sluid == RUN


def test_a_limit_lowered_below_the_elapsed_time_ends_the_run_at_the_next_pass() -> None:
    scenario = given(*_running(600))
    [lowered] = scenario.when(_update("alice", "60"), T0 + 120_000).facts
    scenario.state = evolve(scenario.state, lowered)
    [kill] = scenario.when(schedule_pass(), T0 + 120_000).matching(RunKillRequested)
    assert kill.reason == "TIMEOUT"


def test_each_node_of_the_run_is_told_the_new_limit() -> None:
    scenario = given(*_running(600), config=OPS)
    [raised] = scenario.when(_update("olga", "1200")).facts
    state = evolve(scenario.state, raised)
    commands = node_commands(state, raised)
    assert [type(c) for c in commands] == [SetRunLimit, SetRunLimit]
    assert [(c.node_name, c.run_sluid, c.time_limit_s) for c in commands] == [
        ("n1", RUN, 1200), ("n2", RUN, 1200)]
    assert state.jobs[J1].time_limit_s == 1200 and state.jobs[J1].spec.time_limit_s == 1200


def test_a_stale_fact_for_an_earlier_run_changes_nothing() -> None:
    scenario = given(*_running(600))
    stale = TimeLimitChanged(**M, job_sluid=J1, run_sluid=sluid(9), nodes=("n1",),
                             time_limit_s=60, previous_s=600)
    state = evolve(scenario.state, stale)
    assert state.jobs[J1].time_limit_s == 600
    assert node_commands(state, stale) == []
