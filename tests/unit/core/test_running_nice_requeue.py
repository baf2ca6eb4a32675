"""A running job's ``Nice=`` and ``Requeue=`` (Slurm's ``_update_job`` changes both while a job
runs), and the priority a job started with (``JobStarted.priority``: squeue and scontrol show a
running job's priority, as Slurm's, not 0)."""

from __future__ import annotations

from scheduler import JobRejected, UpdateJob, evolve
from scheduler.records import JobDetailsChanged, JobPending, JobStarted
from tests.unit.core.gwt import given, nodes, queued, schedule_pass, sluid, spec, started

J1, J2 = sluid(1), sluid(2)
FAIR = "PriorityWeightAge: 1000\nPriorityMaxAge: 1\n"


def _running(requeue: str = "") -> tuple:
    return (nodes("n", 2), queued(J1, spec(name="train", requeue=requeue)),
            started(J1, ("n1",), 600, 1))


def _update(**changes: str) -> UpdateJob:
    return UpdateJob(job_sluid=J1, user="alice", changes=changes)


def test_the_owner_raises_a_running_jobs_nice_and_the_fold_keeps_it() -> None:
    scenario = given(*_running())
    [fact] = scenario.when(_update(nice="10")).facts
    assert isinstance(fact, JobDetailsChanged), fact
    assert (fact.changed, fact.nice) == (("nice",), 10)
    state = evolve(scenario.state, fact)
    assert state.jobs[J1].spec.nice == 10 and state.jobs[J1].is_running


def test_requeue_may_be_turned_off_and_on_again_for_a_run_launched_requeueable() -> None:
    scenario = given(*_running("yes"))
    [off] = scenario.when(_update(requeue="no")).facts
    assert isinstance(off, JobDetailsChanged) and off.requeue == "no", off
    state = evolve(scenario.state, off)
    assert (state.jobs[J1].spec.requeue, state.jobs[J1].requeue) == ("no", "no")
    [on] = given(*_running("yes"), off).when(_update(requeue="yes")).facts
    assert isinstance(on, JobDetailsChanged) and on.requeue == "yes", on


def test_a_run_launched_not_requeueable_stays_so_while_it_runs() -> None:
    """Its nodes do not fence it (restart_after_ms -1): requeued elsewhere it could run
    twice."""
    [refused] = given(*_running("no")).when(_update(requeue="yes")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "InvalidUpdate", refused
    assert "launched not requeueable" in refused.detail


def test_a_job_started_at_once_carries_its_priority_as_one_that_waited_did() -> None:
    outcome = given(nodes("n", 1), queued(J1), queued(J2), config=FAIR).when(schedule_pass())
    [start] = [f for f in outcome.facts if isinstance(f, JobStarted)]
    [waits] = [f for f in outcome.facts if isinstance(f, JobPending)]
    assert start.priority > 0 and waits.priority > 0
    first_come = given(nodes("n", 1), queued(J1)).when(schedule_pass())
    [start] = [f for f in first_come.facts if isinstance(f, JobStarted)]
    assert start.priority == 1  # every priority is 1 without weights (as JobPending's)
