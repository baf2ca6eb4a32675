"""``GET /v1/decisions`` with ``nonces``: each of two submissions under one SLUID gets its own
decision (the job it queued, or its refusal), never the other's."""

from __future__ import annotations

from typing import Any

from projections.decisions import _decision, _nonces
from projections.relay import RelayRequest, parse_relay
from projections.views import Views
from scheduler.records.names import REQUEST_NAMES
from schemas import encode
from tests.unit.projections.ledger_builder import SPEC_DEFAULTS, LedgerBuilder

A, B = 0x1234_5678_9ABC_DEF0, 0x0FED_CBA9_8765_4321  # two clients' nonces


def _views(b: LedgerBuilder) -> Views:
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    return views


def _queued(b: LedgerBuilder, sluid: str, nonce: int, job_id: int = 1,
            array: tuple[str, int] = ("", -1)) -> None:
    b.fact("JobQueued", job_sluid=sluid, job_id=job_id, spec={**SPEC_DEFAULTS, "user": "alice"},
           array_job_sluid=array[0], array_task_id=array[1], nonce=nonce)


def _rejected(b: LedgerBuilder, sluid: str, nonce: int, reason: str = "SluidInUse") -> None:
    b.fact("JobRejected", job_sluid=sluid, reason=reason, detail="d", retryable=True,
           nonce=nonce)


def _answer(views: Views, sluid: str, nonce: int, array: bool = False) -> tuple[Any, ...]:
    found = _decision(views, sluid, until="", array=array, nonce=nonce)
    if found is None:
        return (None,)
    job = found["job"]
    return job["state"], job["job_id"], job.get("reason", "")


def test_each_of_two_colliding_submissions_gets_its_own_decision() -> None:
    b = LedgerBuilder()
    sluid = b.sluid()
    _queued(b, sluid, A, job_id=7)
    views = _views(b)
    assert _answer(views, sluid, A) == ("PENDING", 7, "None")
    assert _answer(views, sluid, B) == (None,)  # not decided yet: not the other's job
    _rejected(b, sluid, B)
    views = _views(b)
    assert _answer(views, sluid, B) == ("REJECTED", 0, "SluidInUse")
    assert _answer(views, sluid, A) == ("PENDING", 7, "None")
    assert _answer(views, sluid, 0) == ("PENDING", 7, "None")  # a client without a nonce


def test_a_refused_first_submission_stays_findable_when_the_second_is_queued() -> None:
    b = LedgerBuilder()
    sluid = b.sluid()
    _rejected(b, sluid, A, reason="InvalidPartition")
    _queued(b, sluid, B, job_id=3)
    views = _views(b)
    assert _answer(views, sluid, A) == ("REJECTED", 0, "InvalidPartition")
    assert _answer(views, sluid, B) == ("PENDING", 3, "None")


def test_two_refused_submissions_under_one_sluid_each_find_their_refusal() -> None:
    b = LedgerBuilder()
    sluid = b.sluid()
    _rejected(b, sluid, A, reason="InvalidPartition")
    _rejected(b, sluid, B, reason="EmptyCommand")
    views = _views(b)
    assert _answer(views, sluid, A) == ("REJECTED", 0, "InvalidPartition")
    assert _answer(views, sluid, B) == ("REJECTED", 0, "EmptyCommand")


def test_an_array_answers_only_its_own_submission() -> None:
    b = LedgerBuilder()
    array = b.sluid()
    for task in range(2):
        _queued(b, b.sluid(), A, job_id=5 + task, array=(array, task))
    _rejected(b, array, B)
    views = _views(b)
    assert _answer(views, array, A, array=True) == ("PENDING", 5, "None")
    assert _answer(views, array, B, array=True) == ("REJECTED", 0, "SluidInUse")
    assert array not in views.jobs  # a denial: the array's SLUID is no REJECTED job


def test_after_a_restart_an_array_and_its_colliding_refusal_still_answer_each_their_own(
) -> None:
    """The views forgot which SLUIDs are arrays (a cache): the refusal becomes a REJECTED row
    under the array's SLUID, and the array's client still finds its tasks."""
    b = LedgerBuilder()
    array = b.sluid()
    _queued(b, b.sluid(), A, job_id=5, array=(array, 0))
    views = _views(b)
    views.array_ids.clear()
    _rejected(b, array, B)
    views.apply(*b.facts[-1])
    assert _answer(views, array, A, array=True) == ("PENDING", 5, "None")
    assert _answer(views, array, B, array=True) == ("REJECTED", 0, "SluidInUse")


def test_a_denial_answers_only_the_submission_that_drew_its_nonce() -> None:
    b = LedgerBuilder()
    sluid = b.sluid()
    _queued(b, sluid, A)
    b.fact("RequestDenied", request="SubmitJob", subject_sluid=sluid, requester="bob",
           reason="Unauthenticated", detail="", nonce=B)
    views = _views(b)
    assert _answer(views, sluid, A) == ("PENDING", 1, "None")
    found = _decision(views, sluid, until="", array=False, nonce=B)
    assert found is not None and found["denial"]["reason"] == "Unauthenticated"


def test_another_users_denial_under_my_sluid_does_not_answer_my_wait() -> None:
    """mallory submits under alice's SLUID (read off the requests topic, or guessed) from
    another partition; her refusal is folded before alice's job: alice's sbatch must not take
    it for its own (a RateLimited would make it submit twice), whatever nonce mallory drew."""
    b = LedgerBuilder()
    sluid = b.sluid()
    for mallory in (B, 0, -1):
        b.fact("RequestDenied", request="SubmitJob", subject_sluid=sluid, requester="mallory",
               reason="RateLimited", detail="", nonce=mallory)
    views = _views(b)
    assert _decision(views, sluid, until="", array=False, nonce=A) is None
    _queued(b, sluid, A, job_id=4)
    assert _answer(_views(b), sluid, A) == ("PENDING", 4, "None")
    b.fact("RequestDenied", request="SubmitJob", subject_sluid=sluid, requester="alice",
           reason="RateLimited", detail="", nonce=A)
    found = _decision(_views(b), sluid, until="", array=False, nonce=A)
    assert found is not None and found["job"]["job_id"] == 4  # the job comes first


def test_nonces_are_one_64_bit_integer_per_id_or_refused() -> None:
    ids = ["s1", "s2"]
    assert _nonces({}, ids) == {}
    assert _nonces({"nonces": [f"{A},-5"]}, ids) == {"s1": A, "s2": -5}
    for bad in ("1", "1,2,3", "x,1", f"{1 << 63},1", "1" * 5000 + ",1", ",1", "--1,1", "²,1"):
        assert isinstance(_nonces({"nonces": [bad]}, ids), str), bad


def test_the_relay_asks_for_the_decision_with_the_records_nonce() -> None:
    record = {"job_sluid": "s000000000000A", "spec": {"user": "", "command": ["true"],
                                                      "workdir": "/tmp"}, "nonce": A}
    parsed = parse_relay({"Sluice-Key": "s000000000000A"}, encode("SubmitJob", record), 10_000,
                         REQUEST_NAMES.__contains__)
    assert isinstance(parsed, RelayRequest) and parsed.nonce == A
