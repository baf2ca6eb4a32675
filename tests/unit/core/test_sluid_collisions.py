"""Two submissions under one job SLUID: the nonce tells a redelivery from a collision."""

from __future__ import annotations

from typing import Any

from scheduler import (
    CloseCycle,
    JobEnded,
    JobQueued,
    JobRejected,
    ShardState,
    SubmitJob,
    Timed,
    UpdateJob,
    as_record,
    decide,
    evolve,
    initial_state,
    run_cycle,
    state_meta,
)
from scheduler.jobs.refusals import RefuseSubmission
from schemas import decode, encode
from tests.unit.core.gwt import CLUSTER, SHARD, T0, M, given, nodes, queued, restamp, sluid, spec

J1, J2 = sluid(1), sluid(2)
A, B = 0x1234_5678_9ABC_DEF0, 0x0FED_CBA9_8765_4321  # two clients' nonces


def submit(job: str, nonce: int, **fields: Any) -> SubmitJob:
    return SubmitJob(job_sluid=job, spec=spec(**fields), nonce=nonce)


def test_a_queued_job_keeps_its_submissions_nonce() -> None:
    outcome = given().when(submit(J1, A))
    outcome.then(JobQueued(**M, job_sluid=J1, job_id=1, spec=spec(), nonce=A))
    assert outcome.evolved().jobs[J1].nonce == A


def test_a_redelivery_with_the_same_nonce_is_silent() -> None:
    given(queued(J1, nonce=A)).when(submit(J1, A)).then_nothing()


def test_the_same_spec_under_another_nonce_is_a_collision_refused_with_sluid_in_use() -> None:
    outcome = given(queued(J1, nonce=A)).when(submit(J1, B))  # sbatch --wrap in a loop
    [fact] = outcome.facts
    assert isinstance(fact, JobRejected)
    assert (fact.job_sluid, fact.reason, fact.retryable, fact.nonce) == (
        J1, "SluidInUse", True, B)
    assert outcome.evolved().jobs[J1].nonce == A  # the job is the first submission's, unchanged


def test_another_spec_under_another_nonce_is_a_collision_too() -> None:
    [fact] = given(queued(J1, nonce=A)).when(submit(J1, B, name="other")).facts
    assert isinstance(fact, JobRejected) and (fact.reason, fact.nonce) == ("SluidInUse", B)


def test_a_job_queued_without_a_nonce_collides_with_any_submission_that_has_one() -> None:
    [fact] = given(queued(J1)).when(submit(J1, B)).facts
    assert isinstance(fact, JobRejected) and (fact.reason, fact.nonce) == ("SluidInUse", B)


def test_another_users_submission_with_the_jobs_nonce_is_refused_not_taken_for_a_redelivery(
) -> None:
    """A nonce others have read (the ledger carries it) cannot suppress their submission."""
    [fact] = given(queued(J1, nonce=A)).when(submit(J1, A, user="mallory")).facts
    assert isinstance(fact, JobRejected) and (fact.reason, fact.nonce) == ("SluidInUse", A)


def test_an_old_client_without_a_nonce_keeps_the_spec_rule() -> None:
    given(queued(J1, nonce=A)).when(submit(J1, 0)).then_nothing()
    [fact] = given(queued(J1, nonce=A)).when(submit(J1, 0, name="other")).facts
    assert isinstance(fact, JobRejected) and (fact.reason, fact.nonce) == (
        "DuplicateSubmission", 0)


def test_an_array_collision_is_refused_and_its_redelivery_silent() -> None:
    first = given(*nodes("n", 1)).when(submit(J1, A, array="0-2"))
    assert [f.nonce for f in first.facts if isinstance(f, JobQueued)] == [A, A, A]
    state = first.evolved()
    outcome = _decide(state, submit(J1, A, array="0-2"))
    assert outcome == []
    [fact] = _decide(state, submit(J1, B, array="0-2"))
    assert isinstance(fact, JobRejected) and (fact.reason, fact.nonce) == ("SluidInUse", B)


def test_a_refusal_of_every_kind_carries_the_submissions_nonce() -> None:
    [fact] = given().when(submit(J1, B, partition="nope")).facts
    assert isinstance(fact, JobRejected) and (fact.reason, fact.nonce) == ("InvalidPartition", B)


def test_an_intake_refusal_of_a_colliding_submission_is_recorded_with_its_nonce() -> None:
    refusal = RefuseSubmission(job_sluid=J1, reason="KeyMismatch", detail="why", nonce=B)
    [fact] = given(queued(J1, nonce=A)).when(refusal).facts
    assert isinstance(fact, JobRejected) and (fact.reason, fact.nonce) == ("KeyMismatch", B)
    own = RefuseSubmission(job_sluid=J1, reason="KeyMismatch", detail="why", nonce=A)
    given(queued(J1, nonce=A)).when(own).then_nothing()


def test_an_update_keeps_the_jobs_nonce() -> None:
    state = given(queued(J1, spec(hold=True), nonce=A)).state
    [fact] = _decide(state, UpdateJob(job_sluid=J1, user="alice", changes={"name": "x"}))
    assert isinstance(fact, JobQueued) and fact.nonce == A
    assert evolve(state, fact).jobs[J1].nonce == A


def test_a_nonce_round_trips_through_avro_and_an_old_record_decodes_without_one() -> None:
    name, record = as_record(submit(J1, (1 << 63) - 1))
    assert decode(encode(name, record))[1]["nonce"] == (1 << 63) - 1
    assert SubmitJob(job_sluid=J1, spec=spec()).nonce == 0


def test_collisions_re_decided_give_the_same_facts_and_the_ledger_the_same_state() -> None:
    requests = [submit(J1, A), submit(J1, B), submit(J1, A), submit(J2, B, array="0-1"),
                submit(J2, A, array="0-1"), submit(J1, 0, name="other")]
    timed = [Timed(10 + i, T0 + i, r) for i, r in enumerate(requests)]
    first = run_cycle(_two_nodes(), timed, None, T0 + 10)
    second = run_cycle(_two_nodes(), timed, None, T0 + 10)
    assert [as_record(f) for f in first.facts] == [as_record(f) for f in second.facts]
    reasons = [f.reason for f in first.facts if isinstance(f, JobRejected)]
    assert reasons == ["SluidInUse", "SluidInUse", "DuplicateSubmission"]
    replayed = _two_nodes()
    for fact in first.facts:
        replayed = evolve(replayed, fact)
    assert replayed.jobs == first.state.jobs
    assert {j.job_sluid: j.nonce for j in replayed.jobs.values() if not j.array_job_sluid} == {
        J1: A}


def _two_nodes() -> ShardState:
    state = initial_state(SHARD, CLUSTER)
    for fact in nodes("n", 2, cpus=2):
        state = evolve(state, restamp(state, fact))
    return state


def _decide(state: ShardState, request: Any) -> list[Any]:
    return decide(state, request, T0)


def test_an_array_task_never_takes_the_sluid_of_a_job_the_shard_has() -> None:
    """A client whose clock runs ahead minted a SLUID for the millisecond the shard mints
    array tasks in: the shard mints past it (deterministically)."""
    base = _two_nodes()  # (evolve may update a state in place: two bases, built the same)
    probe = evolve(base, restamp(base, queued(J1, nonce=A)))
    array = submit(J2, B, array="0-1")
    first_task = next(f.job_sluid for f in decide(probe, array, T0) if isinstance(f, JobQueued))
    base = _two_nodes()
    state = evolve(base, restamp(base, queued(first_task, nonce=A)))  # the same clock as probe
    facts = decide(state, array, T0)
    tasks = [f.job_sluid for f in facts if isinstance(f, JobQueued)]
    assert len(tasks) == 2 and first_task not in tasks
    assert facts == decide(state, array, T0)  # re-decided: the same SLUIDs
    after = state
    for fact in facts:
        after = evolve(after, fact)
    assert after.jobs[first_task] == state.jobs[first_task]  # the job is unchanged


def test_a_purged_job_keeps_its_nonce_in_the_dedupe_window() -> None:
    """After MinJobAge the job is gone but its SLUID and nonce stay: its redelivery is silent,
    another submission under its SLUID is refused (a client clock far behind drew it)."""
    gone = JobEnded(**M, job_sluid=J1, job_id=1, run_sluid="", state="CANCELLED",
                    job_state="CANCELLED")
    state = given(queued(J1, nonce=A), gone, config="MinJobAge: 10\n").state
    [cycle] = decide(state, CloseCycle(inbox_partition=0, inbox_from=0, inbox_to=1), T0 + 10_000)
    state = evolve(state, cycle)
    assert J1 not in state.jobs and state.meta.known.nonce_of(J1) == A
    assert state_meta(state).known.nonce_of(J1) == A  # persisted with the shard's meta
    state.meta.known.remember(J2)  # purged before nonces were recorded
    assert decide(state, submit(J1, A), T0 + 11_000) == []
    [fact] = decide(state, submit(J1, B), T0 + 11_000)
    assert isinstance(fact, JobRejected) and (fact.reason, fact.nonce) == ("SluidInUse", B)
    assert decide(state, submit(J2, B), T0 + 11_000) == []  # no nonce recorded: as before
    state.meta.known.trim(T0 + 10**9, 1, 10)  # the window moved past them
    assert not state.meta.known.nonces and not state.meta.known.keys
