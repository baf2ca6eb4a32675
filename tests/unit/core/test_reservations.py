"""Advanced reservations (``scontrol create|update|delete reservation``, ``--reservation``):
decided from record times only, kept by the fold, obeyed by the pass (backfill included)."""

from __future__ import annotations

from dataclasses import replace

from scheduler import JobRejected, JobStarted, SubmitJob, UpdateJob, decide, evolve
from scheduler.access.identity import Attributed, Identity
from scheduler.records import (
    CreateReservation,
    DeleteReservation,
    HoldJob,
    JobPending,
    JobQueued,
    ReleaseJob,
    RequestDenied,
    ReservationDeleted,
    ReservationSet,
    RunKillRequested,
)
from scheduler.shard.state import initial_state
from tests.unit.core.gwt import (
    SHARD,
    T0,
    M,
    Scenario,
    given,
    nodes,
    queued,
    schedule_pass,
    sluid,
    spec,
    started,
)

R1, R2 = sluid(901), sluid(902)
J1, J2, J3 = sluid(1), sluid(2), sluid(3)
MIN = 60_000


def _create(name: str = "maint", **fields: object) -> CreateReservation:
    base: dict[str, object] = {"request_sluid": R1, "name": name, "start_in_s": 600,
                               "duration_s": 3600, "nodes": "n1", "users": ("root",)}
    base.update(fields)
    return CreateReservation(**base)  # type: ignore[arg-type]


def _fold(scenario: Scenario, request: object, now_ms: int = T0) -> list[object]:
    facts = decide(scenario.state, request, now_ms)  # type: ignore[arg-type]
    for fact in facts:
        scenario.state = evolve(scenario.state, fact)
    return list(facts)


def _pass(scenario: Scenario, now_ms: int) -> list[object]:
    outcome = scenario.when(schedule_pass(), now_ms)
    outcome.evolved()
    scenario.state = outcome.state
    return list(outcome.facts)


def test_create_decides_the_window_from_the_record_time() -> None:
    given(nodes("n", 2)).when(_create()).then(ReservationSet(
        **M, request_sluid=R1, name="maint", created=True, start_ms=T0 + 600_000,
        end_ms=T0 + 4_200_000, nodes=("n1",), users=("root",)))
    [fact] = given(nodes("n", 2)).when(
        _create(start_in_s=-1, start_ms=T0 - 5000, end_in_s=60, duration_s=-1,
                nodes="ALL", node_cnt=0, flags=("maint", "IGNORE_JOBS"))).facts
    assert isinstance(fact, ReservationSet)  # a start in the past is now; EndTime=now+60
    assert (fact.start_ms, fact.end_ms, fact.nodes) == (T0, T0 + 60_000, ("n1", "n2"))
    assert fact.flags == ("MAINT", "IGNORE_JOBS")


def test_node_count_picks_free_nodes_in_node_order() -> None:
    scenario = given(nodes("n", 3), queued(J1), started(J1, ("n1",), 0, 1))
    [fact] = scenario.when(_create(nodes="", node_cnt=2)).facts
    assert fact.nodes == ("n2", "n3")  # n1 runs a job without a limit: busy for ever
    [refused] = scenario.when(_create(nodes="", node_cnt=3)).facts
    assert isinstance(refused, RequestDenied) and refused.reason == "NodesBusy"
    assert refused.detail.startswith("Requested nodes are busy")


def test_refusals_carry_slurms_words_and_the_request_sluid() -> None:
    scenario = given(nodes("n", 2))
    _fold(scenario, _create())
    cases = [
        (_create(), "DuplicateReservationName", "Duplicate reservation name"),
        (_create("other", nodes="n9"), "InvalidNodeName", "Invalid node name specified"),
        (_create("other", duration_s=0), "InvalidTime", "Invalid time specified"),
        (_create("other", start_in_s=-1), "InvalidTime", "Invalid time specified"),
        (_create("other", users=()), "InvalidReservationRequest", "A reservation needs"),
        (_create("other", flags=("FLEX",)), "InvalidReservationRequest", "A reservation"),
        (_create("other", nodes=""), "InvalidReservationRequest", "A reservation needs"),
        (_create("other", start_in_s=0), "NodesBusy", "Requested nodes are busy"),
        (_create("gone", update=True), "InvalidReservation", "Requested reservation is invalid"),
        (DeleteReservation(request_sluid=R2, name="gone"), "InvalidReservation",
         "Requested reservation is invalid"),
        (_create("other", user="mallory"), "NotOperator", "mallory is no operator"),
    ]
    for request, reason, words in cases:
        [refused] = scenario.when(request).facts
        assert isinstance(refused, RequestDenied), request
        assert (refused.reason, refused.subject_sluid) == (reason, request.request_sluid)
        assert refused.detail.startswith(words), (request, refused.detail)


def test_a_running_job_into_the_window_makes_the_node_busy_unless_ignore_jobs() -> None:
    scenario = given(nodes("n", 1), queued(J1), started(J1, ("n1",), 3600, 1))
    [refused] = scenario.when(_create()).facts
    assert refused.reason == "NodesBusy" and "job 1 runs there" in refused.detail
    [fact] = scenario.when(_create(flags=("IGNORE_JOBS",))).facts
    assert isinstance(fact, ReservationSet)
    [fact] = scenario.when(_create(start_in_s=3600)).facts  # starts when the job ends
    assert isinstance(fact, ReservationSet)


def test_maint_reservations_may_overlap_others() -> None:
    scenario = given(nodes("n", 1))
    _fold(scenario, _create())
    [fact] = scenario.when(_create("m2", flags=("MAINT",))).facts
    assert isinstance(fact, ReservationSet)


def test_operators_only_with_a_credential_and_the_fact_names_them() -> None:
    config = "Operators: [olga]\nAuthRequired: true\n"
    scenario = given(nodes("n", 1), config=config)
    olga = Identity(kind="munge", user="olga")
    [fact] = decide(scenario.state, Attributed(request=_create(user="olga"), identity=olga), T0)
    assert isinstance(fact, ReservationSet) and fact.by == "olga"
    bob = Identity(kind="munge", user="bob")
    [denied] = decide(scenario.state, Attributed(request=_create(), identity=bob), T0)
    assert isinstance(denied, RequestDenied) and denied.reason == "NotOperator"
    [denied] = decide(scenario.state, Attributed(request=_create(user="root"), identity=bob), T0)
    assert denied.reason == "UserMismatch"  # the record's claim is not the credential's


def test_update_keeps_what_it_does_not_name_and_same_again_decides_nothing() -> None:
    scenario = given(nodes("n", 2))
    _fold(scenario, _create())
    [fact] = scenario.when(_create(update=True, start_in_s=-1, duration_s=-1,
                                   nodes="n2", users=())).facts
    assert fact.created is False and fact.nodes == ("n2",) and fact.users == ("root",)
    assert (fact.start_ms, fact.end_ms) == (T0 + 600_000, T0 + 4_200_000)
    [fact] = scenario.when(_create(update=True, start_in_s=-1, duration_s=60)).facts
    assert fact.end_ms == T0 + 600_000 + 60_000  # Duration= from the kept start
    scenario.when(_create(update=True)).then_nothing()


def test_a_job_outside_never_starts_into_the_window_nor_is_backfilled_there() -> None:
    scenario = given(nodes("n", 1), queued(J1, spec(time_limit_s=3600)),
                     queued(J2, spec(time_limit_s=300)))
    _fold(scenario, _create(start_in_s=600, users=("bob",)))
    facts = _pass(scenario, T0)
    started_ = [f.job_sluid for f in facts if isinstance(f, JobStarted)]
    assert started_ == [J2]  # J1 would reach into the window, J2 ends 5 min before it
    assert {f.job_sluid: f.reason for f in facts if isinstance(f, JobPending)} == {
        J1: "Resources"}


def test_a_job_without_a_limit_never_starts_on_a_node_reserved_later() -> None:
    scenario = given(nodes("n", 2), queued(J1, spec(time_limit_s=0)))
    _fold(scenario, _create(start_in_s=86_400))
    [start] = [f for f in _pass(scenario, T0) if isinstance(f, JobStarted)]
    assert start.nodes == ("n2",)


def test_a_job_of_the_reservation_runs_only_inside_the_window_on_its_nodes() -> None:
    scenario = given(nodes("n", 3))
    _fold(scenario, _create(nodes="n3", users=("alice",), start_in_s=60))
    _fold(scenario, SubmitJob(job_sluid=J1, spec=spec(reservation="maint", time_limit_s=60)))
    facts = _pass(scenario, T0)
    assert [(f.job_sluid, f.reason) for f in facts if isinstance(f, JobPending)] == [
        (J1, "Reservation")]
    assert not [f for f in facts if isinstance(f, JobStarted)]
    [start] = [f for f in _pass(scenario, T0 + MIN) if isinstance(f, JobStarted)]
    assert start.nodes == ("n3",)


def test_a_reservation_job_that_does_not_fit_blocks_only_its_reservation() -> None:
    scenario = given(nodes("n", 2))
    _fold(scenario, _create(nodes="n1", users=("alice",), start_in_s=0))
    _fold(scenario, SubmitJob(job_sluid=J1, spec=spec(reservation="maint", nodes_min=2)))
    _fold(scenario, SubmitJob(job_sluid=J2, spec=spec(time_limit_s=60)))
    facts = _pass(scenario, T0)
    assert [f.job_sluid for f in facts if isinstance(f, JobStarted)] == [J2]
    assert [f.nodes for f in facts if isinstance(f, JobStarted)] == [("n2",)]


def test_submission_refused_for_an_unknown_reservation_or_one_it_may_not_use() -> None:
    scenario = given(nodes("n", 1))
    _fold(scenario, _create(users=("bob",)))
    [refused] = scenario.when(
        SubmitJob(job_sluid=J1, spec=spec(reservation="nope"))).facts
    assert isinstance(refused, JobRejected)
    assert refused.detail.startswith("Requested reservation is invalid")
    [refused] = scenario.when(
        SubmitJob(job_sluid=J1, spec=spec(reservation="maint"))).facts
    assert refused.detail.startswith("Access denied to requested reservation")
    _fold(scenario, _create("acct", users=(), accounts=("physics",), flags=("MAINT",)))
    [ok] = scenario.when(SubmitJob(job_sluid=J1, spec=spec(reservation="acct",
                                                           account="physics"))).facts
    assert not isinstance(ok, JobRejected), ok


def test_the_end_kills_its_runs_and_ends_the_reservation() -> None:
    scenario = given(nodes("n", 1))
    _fold(scenario, _create(users=("alice",), start_in_s=0, duration_s=60))
    _fold(scenario, SubmitJob(job_sluid=J1, spec=spec(reservation="maint", time_limit_s=0)))
    _fold(scenario, SubmitJob(job_sluid=J2, spec=spec(time_limit_s=60)))
    facts = _pass(scenario, T0)
    assert [f.job_sluid for f in facts if isinstance(f, JobStarted)] == [J1]
    assert [f for f in _pass(scenario, T0 + 59_999) if isinstance(f, RunKillRequested)] == []
    facts = _pass(scenario, T0 + MIN)
    kills = [f for f in facts if isinstance(f, RunKillRequested)]
    assert [(f.job_sluid, f.reason) for f in kills] == [(J1, "TIMEOUT")]
    assert [f.name for f in facts if isinstance(f, ReservationDeleted) and f.ended] == ["maint"]
    assert scenario.state.meta.reservations == {}


def test_delete_is_refused_while_its_jobs_run() -> None:
    scenario = given(nodes("n", 1))
    _fold(scenario, _create(users=("alice",), start_in_s=0))
    _fold(scenario, SubmitJob(job_sluid=J1, spec=spec(reservation="maint")))
    _pass(scenario, T0)
    [refused] = scenario.when(DeleteReservation(request_sluid=R2, name="maint")).facts
    assert refused.reason == "ReservationBusy" and refused.detail.startswith(
        "Reservation is busy")


def test_deleted_reservation_frees_its_nodes_and_its_waiting_jobs_say_so() -> None:
    scenario = given(nodes("n", 1), queued(J1, spec(time_limit_s=3600)))
    _fold(scenario, _create(users=("alice",), start_in_s=60))
    _fold(scenario, SubmitJob(job_sluid=J2, spec=spec(reservation="maint")))
    _pass(scenario, T0)
    [gone] = _fold(scenario, DeleteReservation(request_sluid=R2, name="maint"))
    assert isinstance(gone, ReservationDeleted) and not gone.ended
    facts = _pass(scenario, T0 + 1000)
    assert [f.job_sluid for f in facts if isinstance(f, JobStarted)] == [J1]
    assert scenario.state.jobs[J2].reason == "ReservationDeleted"
    # held, as Slurm's RESV_DEL_HOLD: priority 0
    assert [(f.job_sluid, f.priority) for f in facts if isinstance(f, JobPending)] == [(J2, 0)]


def _deleted_with_jobs(config: str = "") -> Scenario:
    """n1 reserved for alice, n2 free; J1 (alice's) waits in the reservation, which is then
    deleted; J2 (alice's too) is held by an operator before."""
    scenario = given(nodes("n", 2), config=config)
    _fold(scenario, _create(users=("alice",), start_in_s=600))
    _fold(scenario, SubmitJob(job_sluid=J1, spec=spec(reservation="maint", time_limit_s=60)))
    _fold(scenario, SubmitJob(job_sluid=J2, spec=spec(reservation="maint", time_limit_s=60)))
    _fold(scenario, HoldJob(job_sluid=J2, admin=True))
    _pass(scenario, T0)
    _fold(scenario, DeleteReservation(request_sluid=R2, name="maint"))
    return scenario


def test_a_job_of_a_deleted_reservation_waits_until_its_user_releases_it_then_runs_anywhere(
) -> None:
    scenario = _deleted_with_jobs()
    facts = _pass(scenario, T0 + 1000)
    assert not [f for f in facts if isinstance(f, JobStarted)]  # n2 is free: it stays held
    assert {f.job_sluid: (f.reason, f.priority) for f in facts if isinstance(f, JobPending)} == {
        J1: ("ReservationDeleted", 0)}
    assert scenario.state.jobs[J2].reason == "JobHeldAdmin"  # an operator's hold stays
    assert not [f for f in _pass(scenario, T0 + 2000) if isinstance(f, JobStarted)]
    released = _fold(scenario, ReleaseJob(job_sluid=J1, user="alice"), T0 + 3000)
    assert [type(f).__name__ for f in released] == ["JobQueued", "JobReleased"]
    assert isinstance(released[0], JobQueued) and released[0].spec.reservation == ""
    assert scenario.state.jobs[J1].spec.reservation == ""  # the same job, id and SLUID
    [start] = [f for f in _pass(scenario, T0 + 4000) if isinstance(f, JobStarted)]
    assert start.job_sluid == J1 and start.nodes in (("n1",), ("n2",))


def test_only_the_owner_or_an_operator_releases_a_deleted_reservations_job() -> None:
    scenario = _deleted_with_jobs("Operators: [olga]\n")
    _pass(scenario, T0 + 1000)
    [refused] = scenario.when(ReleaseJob(job_sluid=J1, user="mallory")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "AccessDenied"
    [refused] = scenario.when(ReleaseJob(job_sluid=J2, user="alice")).facts
    assert isinstance(refused, JobRejected) and refused.reason == "AccessDenied"  # admin hold
    released = _fold(scenario, ReleaseJob(job_sluid=J2, user="olga"), T0 + 2000)
    assert [type(f).__name__ for f in released] == ["JobQueued", "JobReleased"]
    [start] = [f for f in _pass(scenario, T0 + 3000) if isinstance(f, JobStarted)]
    assert start.job_sluid == J2  # its reservation went with the release


def test_a_job_of_an_ended_reservation_is_held_too() -> None:
    scenario = given(nodes("n", 2))
    _fold(scenario, _create(users=("alice",), start_in_s=0, duration_s=60, nodes="n1"))
    _fold(scenario, SubmitJob(job_sluid=J1, spec=spec(reservation="maint", nodes_min=2,
                                                      time_limit_s=60)))
    _pass(scenario, T0)  # does not fit the reservation's one node
    facts = _pass(scenario, T0 + MIN)
    assert [f.name for f in facts if isinstance(f, ReservationDeleted) and f.ended] == ["maint"]
    assert not [f for f in _pass(scenario, T0 + MIN + 1) if isinstance(f, JobStarted)]
    assert scenario.state.jobs[J1].reason == "ReservationDeleted"
    _fold(scenario, ReleaseJob(job_sluid=J1, user="alice"), T0 + MIN + 2)
    [start] = [f for f in _pass(scenario, T0 + MIN + 3) if isinstance(f, JobStarted)]
    assert start.nodes == ("n1", "n2")


def test_a_user_hold_outranks_waiting_for_the_window_not_its_deletion() -> None:
    scenario = given(nodes("n", 1))
    _fold(scenario, _create(users=("alice",), start_in_s=600))
    _fold(scenario, SubmitJob(job_sluid=J1, spec=spec(reservation="maint", hold=True)))
    assert {f.job_sluid: f.reason for f in _pass(scenario, T0)
            if isinstance(f, JobPending)} == {J1: "JobHeldUser"}
    _fold(scenario, DeleteReservation(request_sluid=R2, name="maint"))
    assert {f.job_sluid: f.reason for f in _pass(scenario, T0 + 1)
            if isinstance(f, JobPending)} == {J1: "ReservationDeleted"}
    released = _fold(scenario, ReleaseJob(job_sluid=J1, user="alice"), T0 + 2)
    assert [type(f).__name__ for f in released] == ["JobQueued", "JobReleased"]
    assert [f.job_sluid for f in _pass(scenario, T0 + 3) if isinstance(f, JobStarted)] == [J1]


def test_releasing_a_job_of_a_live_reservation_changes_nothing() -> None:
    scenario = given(nodes("n", 1))
    _fold(scenario, _create(users=("alice",), start_in_s=600))
    _fold(scenario, SubmitJob(job_sluid=J1, spec=spec(reservation="maint")))
    scenario.when(ReleaseJob(job_sluid=J1, user="alice")).then_nothing()


def test_replaying_the_facts_gives_the_same_reservations() -> None:
    scenario = given(nodes("n", 3))
    ledger = [*scenario.state.nodes]  # (the nodes' facts are given; fold the rest again)
    facts = _fold(scenario, _create(nodes="", node_cnt=2))
    facts += _fold(scenario, _create("b", nodes="n3", flags=("MAINT",), request_sluid=R2))
    facts += _fold(scenario, _create(update=True, start_in_s=-1, duration_s=-1,
                                     nodes="n2"))
    replay = given(nodes("n", 3))
    for fact in facts:
        replay.state = evolve(replay.state, fact)
    assert replay.state.meta.reservations == scenario.state.meta.reservations
    assert sorted(scenario.state.meta.reservations) == ["b", "maint"] and ledger


def test_unnamed_reservations_are_named_after_their_operator() -> None:
    [fact] = given(nodes("n", 1)).when(_create("", user="root")).facts
    assert fact.name == "root_1"
    state = initial_state(SHARD, 7)
    assert state.meta.reservations == {}
    assert replace(_create(), name="x").name == "x"


def test_an_update_into_a_reservation_is_checked_as_a_submission() -> None:
    scenario = given(nodes("n", 1), queued(J1))
    _fold(scenario, _create(users=("bob",)))
    [refused] = scenario.when(UpdateJob(job_sluid=J1, user="alice",
                                        changes={"reservation": "maint"})).facts
    assert isinstance(refused, JobRejected)
    assert refused.detail.startswith("Access denied to requested reservation")
    _fold(scenario, _create("mine", users=("alice",), flags=("MAINT",)))
    [moved] = scenario.when(UpdateJob(job_sluid=J1, user="alice",
                                      changes={"reservation": "mine"})).facts
    assert not isinstance(moved, JobRejected) and moved.spec.reservation == "mine"


def test_no_hold_jobs_after_end_lets_its_pending_jobs_run_anywhere() -> None:
    scenario = given(nodes("n", 2))
    [made] = _fold(scenario, _create(users=("alice",), start_in_s=600,
                                     flags=("no_hold_jobs_after",)))
    assert isinstance(made, ReservationSet) and made.flags == ("NO_HOLD_JOBS_AFTER_END",)
    _fold(scenario, SubmitJob(job_sluid=J2, spec=spec(reservation="maint", time_limit_s=60)))
    _fold(scenario, SubmitJob(job_sluid=J1, spec=spec(reservation="maint", time_limit_s=60)))
    _pass(scenario, T0)
    facts = _fold(scenario, DeleteReservation(request_sluid=R2, name="maint"))
    assert [type(f).__name__ for f in facts] == ["ReservationDeleted", "JobQueued", "JobQueued"]
    assert [(f.job_sluid, f.spec.reservation) for f in facts[1:]] == [(J2, ""), (J1, "")]
    started_ = [f.job_sluid for f in _pass(scenario, T0 + 1) if isinstance(f, JobStarted)]
    assert sorted(started_) == [J1, J2]  # not held: on any node


def test_no_hold_jobs_after_end_at_the_end_too() -> None:
    scenario = given(nodes("n", 2))
    _fold(scenario, _create(users=("alice",), start_in_s=0, duration_s=60, nodes="n1",
                            flags=("NO_HOLD_JOBS_AFTER_END",)))
    _fold(scenario, SubmitJob(job_sluid=J1, spec=spec(reservation="maint", nodes_min=2,
                                                      time_limit_s=60)))
    _pass(scenario, T0)
    facts = _pass(scenario, T0 + MIN)
    [let_go] = [f for f in facts if isinstance(f, JobQueued)]
    assert let_go.job_sluid == J1 and let_go.spec.reservation == ""
    assert not [f for f in facts if isinstance(f, JobPending)]  # not held, not even shown so
    [start] = [f for f in _pass(scenario, T0 + MIN + 1) if isinstance(f, JobStarted)]
    assert start.nodes == ("n1", "n2")
