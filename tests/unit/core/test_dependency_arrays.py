"""Dependencies on arrays (whole, one task, ``aftercorr``), ``after:ID+MIN`` and ``singleton``
as Slurm's ``test_job_dependency`` and ``_find_singleton_job`` decide them."""

from __future__ import annotations

from scheduler import (
    CloseCycle,
    JobHeld,
    JobQueued,
    JobRejected,
    SubmitJob,
    UpdateJob,
    decide,
    evolve,
    schedule,
)
from scheduler.jobs.dependency_syntax import DependencyError, Ref, parse_dependency
from scheduler.records import Fact, JobSpec
from tests.unit.core.gwt import T0, M, given, nodes, queued, schedule_pass, sluid, spec, started
from tests.unit.core.test_job_control import _reasons, _started, ended

ARRAY, OTHER = sluid(100), sluid(101)
T1, T2, T3 = sluid(1), sluid(2), sluid(3)  # the tasks (ids 1, 2, 3) of ARRAY
DEP = sluid(9)


def task(job_sluid: str, task_id: int, array: str = ARRAY, text: str = "1-2",
         **fields: object) -> JobQueued:
    return queued(job_sluid, spec(array=text, **fields), array_job_sluid=array,
                  array_task_id=task_id)




def _dependent(text: str, *before: Fact | list[Fact], now: int = T0) -> tuple[list[str], str]:
    """Whether job DEP (``-d text``, queued after ``before``) starts, and its pending reason."""
    facts = given(nodes("n", 4), *before, queued(DEP, spec(dependency=text))).when(
        schedule_pass(), now).facts
    return [s for s in _started(facts) if s == DEP], _reasons(facts).get(DEP, "")


# -- a whole array --------------------------------------------------------------------------


def test_afterok_on_an_array_id_waits_for_every_task_not_only_the_first() -> None:
    first_done = (task(T1, 1), task(T2, 2), started(T2, ("n1",), 0, 2), ended(T1, 1, "COMPLETED"))
    assert _dependent("afterok:1", *first_done) == ([], "Dependency")
    assert _dependent("afterok:1", *first_done, ended(T2, 2, "FAILED")) == (
        [], "DependencyNeverSatisfied")
    assert _dependent("afterok:1", *first_done, ended(T2, 2, "COMPLETED")) == ([DEP], "")


def test_an_array_named_by_its_sluid_is_every_task_too() -> None:
    first_done = (task(T1, 1), task(T2, 2), ended(T1, 1, "COMPLETED"))
    assert _dependent(f"afterany:{ARRAY}", *first_done) == ([], "Dependency")
    assert _dependent(f"afterany:{ARRAY}", *first_done, ended(T2, 2, "CANCELLED")) == ([DEP], "")


def test_afternotok_on_an_array_holds_once_all_ended_and_one_failed() -> None:
    one_failed = (task(T1, 1), task(T2, 2), ended(T1, 1, "FAILED"))
    assert _dependent("afternotok:1", *one_failed) == ([], "Dependency")
    assert _dependent("afternotok:1", *one_failed, ended(T2, 2, "COMPLETED")) == ([DEP], "")
    all_ok = (task(T1, 1), task(T2, 2), ended(T1, 1, "COMPLETED"), ended(T2, 2, "COMPLETED"))
    assert _dependent("afternotok:1", *all_ok) == ([], "DependencyNeverSatisfied")


def test_after_on_an_array_waits_while_any_task_is_pending() -> None:
    one_started = (nodes("m", 1), task(T1, 1), task(T2, 2, hold=True),
                   started(T1, ("m1",), 0, 1))
    assert _dependent("after:1", *one_started) == ([], "Dependency")
    assert _dependent("after:1", *one_started, started(T2, ("m1",), 0, 2)) == ([DEP], "")


def test_the_array_id_still_names_the_array_after_its_first_task_was_purged() -> None:
    config = "MinJobAge: 10\n"
    state = given(nodes("n", 4), task(T1, 1), task(T2, 2), started(T2, ("n1",), 0, 2),
                  ended(T1, 1, "COMPLETED"), config=config).state
    [cycle] = decide(state, CloseCycle(inbox_partition=0, inbox_from=0, inbox_to=1), T0 + 20_000)
    state = evolve(state, cycle)
    assert T1 not in state.jobs
    [fact] = decide(state, SubmitJob(job_sluid=DEP, spec=spec(dependency="afterok:1")),
                    T0 + 20_000)
    assert isinstance(fact, JobQueued)
    facts = schedule(evolve(state, fact), T0 + 20_000)
    assert _reasons(facts).get(DEP) == "Dependency" and DEP not in _started(facts)


# -- one task, ARRAYID_TASKID ---------------------------------------------------------------


def test_arrayid_taskid_is_accepted_and_depends_on_that_task_alone() -> None:
    task2_done = (task(T1, 1), task(T2, 2), started(T1, ("n1",), 0, 1), ended(T2, 2, "COMPLETED"))
    assert _dependent("afterok:1_2", *task2_done) == ([DEP], "")
    assert _dependent("afterok:1_1", *task2_done) == ([], "Dependency")
    assert _dependent("afterok:1_[1-2]", *task2_done) == ([], "Dependency")
    assert _dependent("afterok:2", *task2_done) == ([DEP], "")  # job 2 is no array's id


def test_a_task_an_array_does_not_have_or_a_task_of_a_plain_job_is_refused() -> None:
    base = (task(T1, 1), task(T2, 2), queued(T3))
    for text, detail in (("afterok:1_5", "array 1 has no task 5"),
                         ("afterok:3_1", "job 3 is not an array job"),
                         ("afterok:7_1", "job 7 does not exist"),
                         ("afterok:1_x", "ARRAYID_TASKID"),
                         ("after:1+0", "minutes"),
                         ("expand:1", "not supported")):
        [fact] = given(*base).when(SubmitJob(job_sluid=DEP, spec=spec(dependency=text))).facts
        assert isinstance(fact, JobRejected), text
        assert fact.reason == "InvalidDependency" and detail in fact.detail, (text, fact.detail)


def test_the_dependency_syntax_reads_slurms_forms() -> None:
    assert parse_dependency("afterok:5_[1-3,7]").items == (
        ("afterok", (Ref("5", 1), Ref("5", 2), Ref("5", 3), Ref("5", 7))),)
    assert parse_dependency("after:5+10?afterok:6").items == (
        ("after", (Ref("5", -1, 10),)), ("afterok", (Ref("6"),)))
    assert parse_dependency("5").items == (("afterany", (Ref("5"),)),)  # Slurm's old form
    for text in ("aftercorr", "afterok:5_[9-1]", "afterok:5_[0-99999]", "after:5+x"):
        try:
            parse_dependency(text)
        except DependencyError:
            continue
        raise AssertionError(text)


# -- aftercorr ------------------------------------------------------------------------------


def test_aftercorr_lets_each_task_wait_for_the_task_of_the_same_id_only() -> None:
    corr = spec(array="1-2", dependency="aftercorr:1")
    facts = given(
        nodes("n", 4), task(T1, 1), task(T2, 2), started(T2, ("n1",), 0, 2),
        ended(T1, 1, "COMPLETED"),
        queued(sluid(11), corr, array_job_sluid=OTHER, array_task_id=1),
        queued(sluid(12), corr, array_job_sluid=OTHER, array_task_id=2),
    ).when(schedule_pass()).facts
    assert _started(facts) == [sluid(11)]
    assert _reasons(facts) == {sluid(12): "Dependency"}


def test_aftercorr_on_a_failed_task_or_on_a_plain_job_is_afterok() -> None:
    corr = spec(array="1-2", dependency="aftercorr:1")
    facts = given(
        nodes("n", 4), task(T1, 1), task(T2, 2), ended(T1, 1, "FAILED"),
        queued(sluid(11), corr, array_job_sluid=OTHER, array_task_id=1),
    ).when(schedule_pass()).facts
    assert _reasons(facts) == {sluid(11): "DependencyNeverSatisfied"}
    assert _dependent("aftercorr:1", queued(T1), ended(T1, 1, "COMPLETED")) == ([DEP], "")
    assert _dependent("aftercorr:1", queued(T1), ended(T1, 1, "FAILED")) == (
        [], "DependencyNeverSatisfied")


def test_an_array_task_may_not_depend_on_its_own_array() -> None:
    state = given(task(T1, 1), task(T2, 2)).state
    for text in ("afterok:1", f"aftercorr:{ARRAY}"):
        [fact] = decide(state, UpdateJob(job_sluid=T2, changes={"dependency": text}), T0)
        assert isinstance(fact, JobRejected) and "ircular" in fact.detail, text
    [fact] = decide(state, UpdateJob(job_sluid=T2, changes={"dependency": "afterok:1_1"}), T0)
    assert isinstance(fact, JobQueued)  # a sibling task is another job


# -- after:ID+MINUTES -----------------------------------------------------------------------


def test_after_with_minutes_waits_that_long_after_the_job_started() -> None:
    running = (queued(T1), started(T1, ("n1",), 0, 1))
    assert _dependent("after:1+2", *running, now=T0 + 60_000) == ([], "Dependency")
    assert _dependent("after:1+2", *running, now=T0 + 120_000) == ([DEP], "")
    assert _dependent("after:1", *running) == ([DEP], "")


# -- singleton ------------------------------------------------------------------------------


def _named(name: str, user: str = "alice", **fields: object) -> JobSpec:
    return spec(name=name, user=user, **fields)


def test_singleton_waits_for_an_earlier_pending_job_of_the_same_name_and_user_only() -> None:
    single = _named("sx", dependency="singleton")
    held = (queued(T1, _named("sx")), JobHeld(**M, job_sluid=T1, admin=False))
    facts = given(nodes("n", 2), *held, queued(DEP, single)).when(schedule_pass()).facts
    assert _reasons(facts) == {T1: "JobHeldUser", DEP: "Dependency"}
    for other in (_named("sx", user="bob", hold=True), _named("sy", hold=True)):
        facts = given(nodes("n", 2), queued(T1, other), queued(DEP, single)).when(
            schedule_pass()).facts
        assert _started(facts) == [DEP], other
    later = given(nodes("n", 2), queued(DEP, single), queued(T1, _named("sx", hold=True)))
    assert _started(later.when(schedule_pass()).facts) == [DEP]


def test_singleton_array_tasks_run_in_order_and_wait_behind_a_held_first_task() -> None:
    state = given(nodes("n", 4)).when(SubmitJob(job_sluid=ARRAY, spec=_named(
        "sx", array="1-3", dependency="singleton"))).evolved()
    first, *others = state.arrays[ARRAY]
    facts = schedule(state, T0 + 1)
    assert _started(facts) == [first]
    assert _reasons(facts) == dict.fromkeys(others, "Dependency")
    state = evolve(state, JobHeld(**M, job_sluid=first, admin=False))
    facts = schedule(state, T0 + 1)
    assert _started(facts) == []
    assert _reasons(facts) == {first: "JobHeldUser", **dict.fromkeys(others, "Dependency")}
