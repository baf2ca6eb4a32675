"""``scontrol update JobId=N Priority=P``: an operator's priority orders the queue; 0 holds."""

from __future__ import annotations

from scheduler import JobHeld, JobPending, JobRejected, JobStarted, UpdateJob, evolve
from scheduler.records import JobPrioritySet
from tests.unit.core.gwt import M, given, nodes, queued, schedule_pass, sluid, spec, started

J1, J2, J3 = sluid(1), sluid(2), sluid(3)
OPS = "Operators: [olga]\n"


def _priority(job: str, user: str, value: str) -> UpdateJob:
    return UpdateJob(job_sluid=job, user=user, changes={"priority": value})


def test_an_operator_sets_a_pending_jobs_priority() -> None:
    given(queued(J1), config=OPS).when(_priority(J1, "olga", "5000")).then(
        JobPrioritySet(**M, job_sluid=J1, priority=5000))


def test_the_job_with_the_operators_priority_starts_first() -> None:
    scenario = given(nodes("n", 1), queued(J1), queued(J2), queued(J3), config=OPS)
    [fact] = scenario.when(_priority(J3, "olga", "100")).facts
    scenario.state = evolve(scenario.state, fact)
    outcome = scenario.when(schedule_pass())
    assert [f.job_sluid for f in outcome.matching(JobStarted)] == [J3]
    shown = {f.job_sluid: f.priority for f in outcome.matching(JobPending)}
    assert shown[J1] == shown[J2] == 1  # the others keep their multifactor priority


def test_priority_zero_holds_as_an_operator_or_as_the_owner() -> None:
    given(queued(J1), config=OPS).when(_priority(J1, "olga", "0")).then(
        JobHeld(**M, job_sluid=J1, admin=True))
    given(queued(J1), config=OPS).when(_priority(J1, "alice", "0")).then(
        JobHeld(**M, job_sluid=J1, admin=False))


def test_the_owner_may_not_set_a_priority_nor_may_anyone_on_a_held_or_running_job() -> None:
    [refused] = given(queued(J1), config=OPS).when(_priority(J1, "alice", "10")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "AccessDenied"
    assert refused.detail.startswith("Access/permission denied: alice may not set a priority")
    held = queued(J1, spec(hold=True))
    [refused] = given(held, config=OPS).when(_priority(J1, "olga", "10")).facts
    assert refused.reason == "JobHeld"
    assert refused.detail.startswith("Job is in held state, pending scheduler release")
    running = (nodes("n", 1), queued(J1), started(J1, ("n1",), 60, 1))
    [refused] = given(*running, config=OPS).when(_priority(J1, "olga", "10")).facts
    assert refused.reason == "JobNotPending"


def test_a_bad_priority_or_one_with_other_fields_is_an_invalid_update() -> None:
    for changes in ({"priority": "high"}, {"priority": "-3"}, {"priority": "4294967295"},
                    {"priority": "10", "nice": "5"}):
        [refused] = given(queued(J1), config=OPS).when(
            UpdateJob(job_sluid=J1, user="olga", changes=changes)).facts
        assert isinstance(refused, JobRejected) and refused.reason == "InvalidUpdate", changes


def test_the_same_priority_again_is_no_change() -> None:
    scenario = given(queued(J1), config=OPS)
    [fact] = scenario.when(_priority(J1, "olga", "7")).facts
    scenario.state = evolve(scenario.state, fact)
    scenario.when(_priority(J1, "olga", "7")).then_nothing()
    assert scenario.state.jobs[J1].admin_priority == 7


def test_a_requeued_job_keeps_the_priority_an_operator_set() -> None:
    from scheduler.scheduling.priority import ordered_queue
    from tests.unit.core.requeue_fixtures import epilog, node_failed
    from tests.unit.core.requeue_fixtures import started as started_on
    from tests.unit.core.test_foundation import state_changed

    scenario = given(nodes("n", 2), queued(J1, spec(nodes_min=2)),
                     JobPrioritySet(**M, job_sluid=J1, priority=500),
                     started_on(J1, 1, ("n1", "n2")),
                     *(state_changed(n, "ALLOCATED") for n in ("n1", "n2")))
    scenario.when(node_failed("n1")).evolved()
    state = scenario.when(epilog(J1, 1, "n2")).evolved()
    assert state.jobs[J1].state == "PENDING" and state.jobs[J1].admin_priority == 500
    jobs, prios = ordered_queue(state, state.meta.now_ms)
    assert [j.job_sluid for j in jobs] == [J1] and prios.tolist() == [500]
