"""``run_cycle``: one cycle for shard, verify and simulator; a request can fail, the cycle not."""

from __future__ import annotations

from typing import Any

import pytest

import scheduler.cycle as cycle_module
from scheduler import (
    CancelJob,
    CycleCompleted,
    InboxRange,
    JobQueued,
    JobRejected,
    JobStarted,
    RequestDenied,
    ShardState,
    SubmitJob,
    Tick,
    Timed,
    UpdateJob,
    as_record,
    evolve,
    initial_state,
    restore_state,
    run_cycle,
    state_meta,
)
from scheduler.cycle import IDLE_CLOSE_MS
from schemas import EncodeError, encode
from tests.unit.core.gwt import CLUSTER, SHARD, T0, nodes, queued, restamp, sluid, spec

J1, J2, J3 = sluid(1), sluid(2), sluid(3)
INBOX = InboxRange(0, 10, 12)


def two_idle_nodes() -> ShardState:
    state = initial_state(SHARD, CLUSTER)
    for fact in nodes("n", 2, cpus=2):
        state = evolve(state, restamp(state, fact))
    return state


def copy(state: ShardState) -> ShardState:
    return restore_state(state_meta(state), dict(state.jobs), dict(state.nodes))


def avro(obj: Any) -> bytes:
    return encode(*as_record(obj))


def submit(job: str, position: int, **fields: Any) -> Timed:
    return Timed(position, T0, SubmitJob(job_sluid=job, spec=spec(**fields)))


def test_a_cycle_decides_each_request_runs_one_pass_and_closes_with_its_inbox_range() -> None:
    state = two_idle_nodes()
    out = run_cycle(state, [submit(J1, 10), submit(J2, 11)], INBOX, encode=avro)

    kinds = [type(f).__name__ for f in out.facts]
    assert kinds == ["JobQueued", "JobQueued", "JobStarted", "JobStarted", "CycleCompleted"]
    close = out.facts[-1]
    assert isinstance(close, CycleCompleted)
    assert (close.inbox_partition, close.inbox_from, close.inbox_to) == (0, 10, 12)
    assert len(out.encoded_facts) == len(out.facts)
    assert [type(c).__name__ for c in out.commands] == ["LaunchRun", "LaunchRun"]
    assert out.closed and out.state.meta.inbox_offset == 12 and not out.failures


def test_a_quiet_cycle_closes_only_when_the_shard_was_idle_for_the_idle_close() -> None:
    state = two_idle_nodes()
    tick = Timed(10, T0 + 1000, Tick(shard=SHARD, time_ms=T0 + 1000))
    first = run_cycle(state, [tick], INBOX)  # a new shard has never closed: it closes now
    assert [type(f) for f in first.facts] == [CycleCompleted]
    later = Timed(13, T0 + 1000 + IDLE_CLOSE_MS - 1, Tick(shard=SHARD, time_ms=0))
    assert run_cycle(first.state, [later], InboxRange(0, 13, 13)).facts == []
    due = Timed(14, T0 + 1000 + IDLE_CLOSE_MS, Tick(shard=SHARD, time_ms=0))
    assert [type(f) for f in run_cycle(first.state, [due], InboxRange(0, 14, 14)).facts] == [
        CycleCompleted]


def test_without_an_inbox_a_cycle_closes_only_for_a_purge_or_an_accrual() -> None:
    state = two_idle_nodes()
    out = run_cycle(state, [submit(J1, 0)], None, T0)
    assert [type(f) for f in out.facts] == [JobQueued, JobStarted]  # nothing to purge or accrue
    assert not out.closed


def test_a_request_whose_decision_raises_is_refused_and_the_rest_of_the_batch_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = cycle_module.decide

    def flaky(state: ShardState, request: Any, now_ms: int) -> list[Any]:
        if getattr(request, "job_sluid", "") in (J1, J2):
            raise OverflowError("int too large to convert")
        return real(state, request, now_ms)

    monkeypatch.setattr(cycle_module, "decide", flaky)
    state = two_idle_nodes()
    cancel = Timed(11, T0, CancelJob(job_sluid=J2, user="bob"))
    out = run_cycle(state, [submit(J1, 10), cancel, submit(J3, 12)], INBOX, encode=avro)

    rejected, denied = out.facts[0], out.facts[1]
    assert isinstance(rejected, JobRejected) and rejected.job_sluid == J1
    assert rejected.reason == "InternalError" and "OverflowError" in rejected.detail
    assert isinstance(denied, RequestDenied) and denied.request == "CancelJob"
    assert (denied.subject_sluid, denied.requester, denied.reason) == (J2, "bob", "InternalError")
    assert isinstance(out.facts[2], JobQueued) and out.facts[2].job_sluid == J3
    assert [(f.position, f.stage) for f in out.failures] == [(10, "decide"), (11, "decide")]
    assert J3 in out.state.jobs and J1 not in out.state.jobs
    assert [f.shard_seq for f in out.facts] == list(
        range(out.facts[0].shard_seq, out.facts[0].shard_seq + len(out.facts)))


def test_facts_that_do_not_encode_are_refused_before_anything_is_folded() -> None:
    state = two_idle_nodes()

    def strict(obj: Any) -> bytes:
        if isinstance(obj, JobQueued) and obj.spec.name == "unwritable":
            raise EncodeError("JobSpec.nodes_min: 3000000000 is not an int")
        return avro(obj)

    out = run_cycle(state, [submit(J1, 10, name="unwritable"), submit(J2, 11)], INBOX,
                    encode=strict)
    assert isinstance(out.facts[0], JobRejected) and out.facts[0].reason == "InternalError"
    assert out.failures[0].stage == "encode" and J1 not in out.state.jobs
    assert J2 in out.state.jobs and out.closed


def test_a_request_whose_facts_fail_half_folded_is_rolled_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    start = two_idle_nodes()
    saved = copy(start)
    real = cycle_module.evolve
    calls = {"n": 0}

    def breaks_on_the_second_task(state: ShardState, fact: Any) -> ShardState:
        if isinstance(fact, JobQueued) and fact.array_task_id == 1:
            calls["n"] += 1
            raise KeyError("boom")
        return real(state, fact)

    monkeypatch.setattr(cycle_module, "evolve", breaks_on_the_second_task)
    requests = [submit(J1, 10), submit(J2, 11, array="0-2"), submit(J3, 12)]
    out = run_cycle(start, requests, INBOX, reload=lambda: copy(saved))

    assert calls["n"] == 1 and out.failures[0].stage == "fold"
    assert [type(f).__name__ for f in out.facts[:3]] == ["JobQueued", "JobRejected", "JobQueued"]
    assert set(out.state.arrays) == set()  # task 0 of the array was folded, then rolled back
    assert {j.job_sluid for j in out.state.jobs.values()} == {J1, J3}
    monkeypatch.setattr(cycle_module, "evolve", real)
    replay = copy(saved)
    for fact in out.facts:
        replay = evolve(replay, fact)
    assert state_meta(replay) == state_meta(out.state)
    assert replay.jobs == out.state.jobs and replay.nodes == out.state.nodes


def test_without_reload_a_half_folded_request_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(state: ShardState, fact: Any) -> ShardState:
        raise RuntimeError("bug")

    monkeypatch.setattr(cycle_module, "evolve", broken)
    with pytest.raises(RuntimeError):
        run_cycle(two_idle_nodes(), [submit(J1, 0)], None, T0)


def test_a_failing_scheduling_pass_emits_no_pass_and_the_cycle_still_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(state: ShardState, now_ms: int) -> list[Any]:
        raise OverflowError("Python int too large to convert to C long")

    monkeypatch.setattr(cycle_module, "schedule", broken)
    out = run_cycle(two_idle_nodes(), [submit(J1, 10)], INBOX, encode=avro)
    assert [type(f).__name__ for f in out.facts] == ["JobQueued", "CycleCompleted"]
    assert out.pass_failed and out.failures[-1].request == "schedule"
    assert out.failures[-1].position == -1


def test_out_of_range_values_are_named_rejections_not_exceptions() -> None:
    state = two_idle_nodes()
    requests = [
        submit(J1, 10, time_limit_s=99_999_999_999_999_999 * 60),
        submit(J2, 11, cpus_per_task=0),
        submit(J3, 12, nodes_min=3_000_000_000),
    ]
    out = run_cycle(state, requests, INBOX, encode=avro)
    reasons = [(f.job_sluid, f.reason) for f in out.facts if isinstance(f, JobRejected)]
    assert reasons == [(J1, "ValueOutOfRange"), (J2, "InvalidTaskCount"),
                       (J3, "ValueOutOfRange")]
    assert not out.failures


def test_an_update_out_of_range_is_rejected_and_the_job_is_unchanged() -> None:
    state = two_idle_nodes()
    state = evolve(state, restamp(state, queued(J1, spec(hold=True))))
    before = state.jobs[J1]
    update = UpdateJob(job_sluid=J1, changes={"nodes_min": "3000000000"})
    out = run_cycle(state, [Timed(10, T0, update)], INBOX, encode=avro)
    [rejected] = [f for f in out.facts if isinstance(f, JobRejected)]
    assert rejected.reason == "ValueOutOfRange" and "nodes_min" in rejected.detail
    assert out.state.jobs[J1].spec == before.spec and out.state.jobs[J1].is_pending


def test_a_redelivered_submission_is_silent_and_another_spec_is_a_duplicate() -> None:
    state = two_idle_nodes()
    state = evolve(state, restamp(state, queued(J1, spec(name="a", hold=True))))
    state = run_cycle(state, [], None, T0).state  # its pending reason is recorded
    same = run_cycle(state, [submit(J1, 10, name="a", hold=True)], None, T0)
    assert same.facts == []
    other = run_cycle(state, [submit(J1, 11, name="b")], None, T0)
    [fact] = other.facts
    assert isinstance(fact, JobRejected) and fact.reason == "DuplicateSubmission"
    assert state.jobs[J1].spec.name == "a"


def test_a_decision_whose_facts_are_numbered_out_of_order_is_refused_not_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A handler that builds its facts in another order than it returns them (h3, 2026-12-07:
    a configuration's ended jobs numbered before its own fact) would put a number twice in the
    ledger, which replay refuses: the cycle rolls back and refuses the request instead."""
    real = cycle_module.decide

    def reversed_facts(state: ShardState, request: Any, now_ms: int) -> list[Any]:
        facts = real(state, request, now_ms)
        return facts[::-1] if getattr(request, "job_sluid", "") == J1 else facts

    monkeypatch.setattr(cycle_module, "decide", reversed_facts)
    state = two_idle_nodes()
    saved = copy(state)
    out = run_cycle(state, [submit(J1, 10, array="0-2"), submit(J2, 11)], INBOX, encode=avro,
                    reload=lambda: copy(saved))
    assert [(f.position, f.stage) for f in out.failures] == [(10, "fold")]
    assert "FactOrderError" in repr(out.failures[0].error) or isinstance(
        out.failures[0].error, cycle_module.FactOrderError)
    assert isinstance(out.facts[0], JobRejected) and out.facts[0].reason == "InternalError"
    assert J1 not in out.state.jobs and J2 in out.state.jobs
    seqs = [f.shard_seq for f in out.facts]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
