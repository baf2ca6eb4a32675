"""``scontrol update JobId=N JobName=… Comment=… MailType=… MailUser=…`` of a running job: Slurm
changes them while the job runs (``_update_job`` in slurmctld's ``job_mgr.c``), the owner's
request too; anything else of a running job, or a limit the owner may not set, refuses the
whole request."""

from __future__ import annotations

from scheduler import CancelJob, JobRejected, UpdateJob, evolve
from scheduler.records import JobDetailsChanged, JobStarted, TimeLimitChanged
from tests.unit.core.gwt import (
    M,
    given,
    nodes,
    queued,
    schedule_pass,
    sluid,
    spec,
    started,
)

J1, J2 = sluid(1), sluid(2)
RUN = sluid(501)
OPS = "Operators: [olga]\n"


def _running() -> tuple:
    return (nodes("n", 3), queued(J1, spec(name="train", comment="old")),
            started(J1, ("n1", "n2"), 600, 1))


def _update(user: str, **changes: str) -> UpdateJob:
    return UpdateJob(job_sluid=J1, user=user, changes=changes)


def test_the_owner_renames_a_running_job_and_sets_its_comment() -> None:
    scenario = given(*_running())
    scenario.when(_update("alice", name="eval", comment="new", mail_user="a@b")).then(
        JobDetailsChanged(**M, job_sluid=J1, run_sluid=RUN, name="eval", comment="new",
                          mail_type="", mail_user="a@b",
                          array="", changed=("comment", "mail_user", "name"), requester="alice"))
    [fact] = scenario.when(_update("alice", name="eval")).facts
    state = evolve(scenario.state, fact)
    assert (state.jobs[J1].spec.name, state.jobs[J1].spec.comment) == ("eval", "old")
    assert state.jobs[J1].is_running


def test_the_same_name_again_is_no_change() -> None:
    given(*_running()).when(_update("alice", name="train")).then_nothing()


def test_a_name_and_a_time_limit_together_give_both_facts() -> None:
    facts = given(*_running(), config=OPS).when(
        _update("olga", name="eval", time_limit_s="1200")).facts
    assert [type(f) for f in facts] == [JobDetailsChanged, TimeLimitChanged]


def test_a_limit_the_owner_may_not_raise_refuses_the_name_with_it() -> None:
    [refused] = given(*_running(), config=OPS).when(
        _update("alice", name="eval", time_limit_s="1200")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "AccessDenied"


def test_another_field_of_a_running_job_refuses_the_whole_request() -> None:
    [refused] = given(*_running()).when(_update("alice", name="eval", partition="p2")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "JobNotPending"
    assert refused.detail.startswith("Job is no longer pending execution")
    assert refused.detail.endswith("not partition")


def test_another_user_may_not_rename_it_nor_anyone_a_job_being_killed() -> None:
    scenario = given(*_running(), config=OPS)
    [refused] = scenario.when(_update("mallory", name="x")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "AccessDenied"
    for fact in scenario.when(CancelJob(job_sluid=J1)).facts:
        scenario.state = evolve(scenario.state, fact)
    [refused] = scenario.when(_update("olga", name="x")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "JobFinished"


def test_a_running_job_renamed_no_longer_holds_back_a_singleton_of_its_old_name() -> None:
    scenario = given(*_running(), queued(J2, spec(name="train", dependency="singleton")))
    assert not scenario.when(schedule_pass()).matching(JobStarted)
    [renamed] = scenario.when(_update("alice", name="eval")).facts
    scenario.state = evolve(scenario.state, renamed)
    [start] = scenario.when(schedule_pass()).matching(JobStarted)
    assert start.job_sluid == J2


def test_a_stale_fact_for_an_earlier_run_changes_nothing() -> None:
    scenario = given(*_running())
    stale = JobDetailsChanged(**M, job_sluid=J1, run_sluid=sluid(9), name="x", comment="",
                              mail_type="", mail_user="", array="", changed=("name",))
    assert evolve(scenario.state, stale).jobs[J1].spec.name == "train"
