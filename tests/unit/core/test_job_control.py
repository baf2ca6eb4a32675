"""Dependencies, arrays, hold/release, update, and retention of ended jobs."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler import (
    CancelJob,
    CloseCycle,
    HoldJob,
    JobEnded,
    JobHeld,
    JobPending,
    JobQueued,
    JobRejected,
    JobReleased,
    JobStarted,
    ReleaseJob,
    SubmitJob,
    UpdateJob,
)
from tests.unit.core.gwt import T0, M, given, nodes, queued, schedule_pass, sluid, spec

J1, J2, J3 = sluid(1), sluid(2), sluid(3)


def ended(job_sluid: str, job_id: int, state: str) -> JobEnded:
    return JobEnded(**M, job_sluid=job_sluid, job_id=job_id, run_sluid="", state=state)


def _reasons(facts: Sequence[object]) -> dict[str, str]:
    return {f.job_sluid: f.reason for f in facts if isinstance(f, JobPending)}


def _started(facts: Sequence[object]) -> list[str]:
    return [f.job_sluid for f in facts if isinstance(f, JobStarted)]


# -- dependencies ---------------------------------------------------------------------------


def test_afterok_waits_for_the_job_then_runs_when_it_completed() -> None:
    dependent = queued(J2, spec(dependency="afterok:1"))
    assert (
        _reasons(
            given(nodes("n", 2), queued(J1, spec(nodes_min=3)), dependent)
            .when(schedule_pass())
            .facts
        )[J2]
        == "Dependency"
    )
    outcome = given(nodes("n", 2), queued(J1), ended(J1, 1, "COMPLETED"), dependent).when(
        schedule_pass()
    )
    assert _started(outcome.facts) == [J2]


def test_afterok_on_a_failed_job_can_never_be_satisfied() -> None:
    outcome = given(
        nodes("n", 1),
        queued(J1),
        ended(J1, 1, "FAILED"),
        queued(J2, spec(dependency=f"afterok:{J1}")),
    ).when(schedule_pass())
    assert _reasons(outcome.facts) == {J2: "DependencyNeverSatisfied"}


def test_afternotok_and_afterany_follow_the_end_state() -> None:
    base = (nodes("n", 2), queued(J1), ended(J1, 1, "TIMEOUT"))
    notok = given(*base, queued(J2, spec(dependency="afternotok:1"))).when(schedule_pass())
    assert _started(notok.facts) == [J2]
    anyway = given(*base, queued(J2, spec(dependency="afterany:1"))).when(schedule_pass())
    assert _started(anyway.facts) == [J2]


def test_singleton_runs_one_job_of_a_name_and_user_at_a_time() -> None:
    single = spec(name="etl", dependency="singleton")
    outcome = given(nodes("n", 2), queued(J1, single), queued(J2, single)).when(schedule_pass())
    assert _started(outcome.facts) == [J1]
    assert _reasons(outcome.facts) == {J2: "Dependency"}


def test_a_malformed_or_unknown_dependency_is_rejected_at_submission() -> None:
    for text in ("afterok", "later:1", "afterok:99", f"afterok:{sluid(77)}"):
        [fact] = given(queued(J1)).when(SubmitJob(job_sluid=J2, spec=spec(dependency=text))).facts
        assert isinstance(fact, JobRejected) and fact.reason == "InvalidDependency", text


# -- arrays ---------------------------------------------------------------------------------


def test_an_array_becomes_one_queued_job_per_task_with_consecutive_ids() -> None:
    outcome = given().when(SubmitJob(job_sluid=J1, spec=spec(array="0-4:2")))
    queued_ = outcome.matching(JobQueued)
    assert [(q.job_id, q.array_job_sluid, q.array_task_id) for q in queued_] == [
        (1, J1, 0),
        (2, J1, 2),
        (3, J1, 4),
    ]
    assert len({q.job_sluid for q in queued_}) == 3
    state = outcome.evolved()
    assert given().when(SubmitJob(job_sluid=J1, spec=spec(array="0-4:2"))).facts != []
    from scheduler import decide

    assert decide(state, SubmitJob(job_sluid=J1, spec=spec(array="0-4:2")), T0) == []


def test_an_array_limit_caps_running_tasks() -> None:
    state = given(nodes("n", 4)).when(SubmitJob(job_sluid=J1, spec=spec(array="1-4%2"))).evolved()
    from scheduler import schedule

    facts = schedule(state, T0 + 1)
    assert len([f for f in facts if isinstance(f, JobStarted)]) == 2
    assert set(_reasons(facts).values()) == {"JobArrayTaskLimit"}


def test_cancelling_the_array_cancels_every_task() -> None:
    state = given().when(SubmitJob(job_sluid=J1, spec=spec(array="1-3"))).evolved()
    from scheduler import decide

    facts = decide(state, CancelJob(job_sluid=J1), T0 + 1)
    assert [(f.job_id, f.state) for f in facts if isinstance(f, JobEnded)] == [
        (1, "CANCELLED"),
        (2, "CANCELLED"),
        (3, "CANCELLED"),
    ]


def test_a_malformed_or_too_large_array_is_rejected() -> None:
    for text in ("x", "3-1", "0-5000"):
        [fact] = given().when(SubmitJob(job_sluid=J1, spec=spec(array=text))).facts
        assert isinstance(fact, JobRejected) and fact.reason == "InvalidArraySpec", text


# -- hold, release, update ------------------------------------------------------------------


def test_hold_and_release_a_pending_job() -> None:
    given(queued(J1)).when(HoldJob(job_sluid=J1)).then(JobHeld(**M, job_sluid=J1, admin=False))
    given(queued(J1), JobHeld(**M, job_sluid=J1, admin=False)).when(
        HoldJob(job_sluid=J1)
    ).then_nothing()
    given(queued(J1), JobHeld(**M, job_sluid=J1, admin=False)).when(ReleaseJob(job_sluid=J1)).then(
        JobReleased(**M, job_sluid=J1)
    )


def test_only_an_operator_releases_an_admin_hold() -> None:
    scenario = (queued(J1), JobHeld(**M, job_sluid=J1, admin=True))
    config = "Operators: [root]\n"
    [fact] = given(*scenario, config=config).when(ReleaseJob(job_sluid=J1, user="alice")).facts
    assert isinstance(fact, JobRejected) and fact.reason == "AccessDenied"
    given(*scenario, config=config).when(ReleaseJob(job_sluid=J1, user="root")).then(
        JobReleased(**M, job_sluid=J1)
    )


def test_holding_a_running_job_is_refused() -> None:
    from tests.unit.core.test_foundation import started

    [fact] = (
        given(nodes("n", 1), queued(J1), started(J1, 1, ("n1",))).when(HoldJob(job_sluid=J1)).facts
    )
    assert isinstance(fact, JobRejected) and fact.reason == "JobNotPending"


def test_updating_a_pending_job_requeues_it_with_the_new_spec() -> None:
    request = UpdateJob(job_sluid=J1, changes={"time_limit_s": "600", "nice": "5"})
    given(queued(J1)).when(request).then(
        JobQueued(**M, job_sluid=J1, job_id=1, spec=spec(time_limit_s=600, nice=5))
    )


def test_an_update_naming_an_unknown_field_or_a_bad_value_is_rejected() -> None:
    for changes in ({"colour": "red"}, {"nodes_min": "many"}, {"user": "eve"}, {"nodes_min": "0"}):
        [fact] = given(queued(J1)).when(UpdateJob(job_sluid=J1, changes=changes)).facts
        assert isinstance(fact, JobRejected), changes
        assert fact.reason in {"InvalidUpdate", "InvalidNodeCount"}


def test_an_updated_job_keeps_its_place_in_the_queue() -> None:
    outcome = given(queued(J1), queued(J2, time_ms=T0 + 5)).when(
        UpdateJob(job_sluid=J1, changes={"comment": "x"})
    )
    state = outcome.evolved()
    assert state.jobs[J1].submit_ms == T0 and state.jobs[J1].spec.comment == "x"


# -- retention --------------------------------------------------------------------------------


def test_ended_jobs_are_purged_after_min_job_age_but_stay_known() -> None:
    config = "MinJobAge: 10\n"
    state = given(queued(J1), ended(J1, 1, "CANCELLED"), config=config).state
    from scheduler import decide, evolve

    [cycle] = decide(state, CloseCycle(inbox_partition=0, inbox_from=0, inbox_to=1), T0 + 5_000)
    state = evolve(state, cycle)
    assert J1 in state.jobs and state.purged_jobs == ()
    [cycle] = decide(state, CloseCycle(inbox_partition=0, inbox_from=2, inbox_to=3), T0 + 10_000)
    state = evolve(state, cycle)
    assert J1 not in state.jobs and state.purged_jobs == (J1,)
    assert decide(state, SubmitJob(job_sluid=J1, spec=spec()), T0 + 11_000) == []


def test_a_submission_minted_before_the_dedupe_window_is_refused_as_stale() -> None:
    config = "DedupeWindow: 60\n"
    state = given(queued(J1), config=config).state
    from scheduler import decide, evolve

    [cycle] = decide(state, CloseCycle(inbox_partition=0, inbox_from=0, inbox_to=1), T0 + 120_000)
    state = evolve(state, cycle)
    [fact] = decide(state, SubmitJob(job_sluid=sluid(5, T0), spec=spec()), T0 + 120_000)
    assert isinstance(fact, JobRejected)
    assert (fact.reason, fact.retryable) == ("StaleSubmission", False)


def test_a_dependency_on_a_job_id_that_is_not_plain_digits_is_rejected_not_an_internal_error(
) -> None:
    # "²".isdigit() is true and int("²") raises; so does int() of 4,400 digits
    for text in ("afterok:\u00b2", "afterok:" + "9" * 4400, "afterany:1?afterok:\u00b2"):
        [fact] = given(queued(J1)).when(SubmitJob(job_sluid=J2, spec=spec(dependency=text))).facts
        assert isinstance(fact, JobRejected) and fact.reason == "InvalidDependency", text


def test_an_update_that_makes_a_job_depend_on_itself_or_closes_a_cycle_is_rejected() -> None:
    # as Slurm (ESLURM_CIRCULAR_DEPENDENCY): such a job would wait for ever
    chain = (queued(J1), queued(J2, spec(dependency="afterok:1")),
             queued(J3, spec(dependency=f"afterany:{J2}")))
    for job, text in ((J1, "afterok:1"), (J1, "afterok:2"), (J1, "afterok:3"),
                      (J1, "afterok:3?after:2"), (J2, f"afterok:{J2}")):
        [fact] = given(*chain).when(UpdateJob(job_sluid=job,
                                              changes={"dependency": text})).facts
        assert isinstance(fact, JobRejected), (job, text)
        assert fact.reason == "InvalidDependency" and "ircular" in fact.detail, fact.detail
    [fact] = given(*chain).when(UpdateJob(job_sluid=J3, changes={"dependency": "afterok:1"})).facts
    assert isinstance(fact, JobQueued)  # no cycle: 3 → 1


def test_a_dependency_on_an_ended_job_that_once_named_this_one_is_no_cycle() -> None:
    past = (queued(J1), queued(J2, spec(dependency="afterany:1")), ended(J2, 2, "CANCELLED"))
    [fact] = given(*past).when(UpdateJob(job_sluid=J1, changes={"dependency": "afterany:2"})).facts
    assert isinstance(fact, JobQueued)


def test_an_array_limit_not_in_plain_digits_is_rejected_not_an_internal_error() -> None:
    # "%²": isdigit() is true, int() raises; a limit past an Avro int cannot be recorded
    for text in ("1-3%\u00b2", "1-3%" + "9" * 1000, "1-3%99999999999"):
        [fact] = given().when(SubmitJob(job_sluid=J1, spec=spec(array=text))).facts
        assert isinstance(fact, JobRejected) and fact.reason == "InvalidArraySpec", text[:20]
