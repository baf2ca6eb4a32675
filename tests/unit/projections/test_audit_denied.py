"""The audit of a submission refused for its credential (found trying Sluice from Java with a
registry-aware producer that sent no credential: ``sluice audit SLUID`` said "no job in the
ledger" although the ledger held the ``RequestDenied`` that said why)."""

from __future__ import annotations

from projections.audit import audit_job, find_job
from projections.replay import Fact
from tests.unit.projections.ledger_builder import LedgerBuilder


def _facts(b: LedgerBuilder) -> list[Fact]:
    return [Fact(name, record, 0, offset) for offset, (name, record) in enumerate(b.facts)]


def test_a_submission_denied_for_its_credential_is_found_and_its_denial_explained() -> None:
    b = LedgerBuilder(shard="a")
    refused = b.sluid()
    b.fact("RequestDenied", request="SubmitJob", subject_sluid=refused, requester="",
           reason="Unauthenticated", detail="a credential is required", nonce=0)
    assert find_job(_facts(b), refused) == refused
    texts = [e.text for e in audit_job(_facts(b), refused)]
    assert texts == ["SubmitJob by an unauthenticated client refused: Unauthenticated — a "
                     "credential is required (nothing changed)"], texts


def test_a_denied_cancel_does_not_make_a_job_of_an_unknown_sluid() -> None:
    b = LedgerBuilder(shard="a")
    other = b.sluid()
    b.fact("RequestDenied", request="CancelJob", subject_sluid=other, requester="alice",
           reason="NotOwner", detail="no such job", nonce=0)
    assert find_job(_facts(b), other) is None


def test_a_job_queued_after_a_denied_attempt_is_found_by_its_id_too() -> None:
    b = LedgerBuilder(shard="a")
    job = b.queued(name="second try")
    record = b.facts[-1][1]
    b.facts.insert(0, ("RequestDenied", {**record, "request": "SubmitJob", "subject_sluid": job,
                                         "requester": "alice", "reason": "CredentialExpired",
                                         "detail": "expired", "nonce": 0}))
    assert find_job(_facts(b), str(record["job_id"])) == job
    assert find_job(_facts(b), job) == job


def test_a_colliding_submission_rejected_under_a_jobs_sluid_is_not_the_jobs_rejection() -> None:
    b = LedgerBuilder(shard="a")
    job = b.queued(name="bobs")
    b.fact("JobRejected", job_sluid=job, reason="SluidInUse", detail="another submission",
           retryable=True, nonce=7)
    never = b.sluid()
    b.fact("JobRejected", job_sluid=never, reason="KeyMismatch", detail="keyed x",
           retryable=False, nonce=0)
    assert audit_job(_facts(b), job)[-1].text == (
        "another submission under this SLUID rejected: SluidInUse — another submission (the "
        "job is unchanged)")
    assert audit_job(_facts(b), never)[-1].text == "rejected: KeyMismatch — keyed x"
