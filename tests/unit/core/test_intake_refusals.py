"""A submission the intake refused becomes a JobRejected with the intake's reason."""

from __future__ import annotations

from typing import Any

from scheduler import JobRejected
from scheduler.jobs.refusals import RefuseSubmission
from tests.unit.core.gwt import M, given, queued, sluid

J1, J2 = sluid(1), sluid(2)


def refuse(job_sluid: str, reason: str, detail: str) -> Any:
    """A RefuseSubmission (made by the shell from the intake's mark, not a wire request)."""
    return RefuseSubmission(job_sluid=job_sluid, reason=reason, detail=detail)


def test_a_refused_submission_of_a_new_job_is_rejected_with_the_intake_reason() -> None:
    for reason in ("KeyMismatch", "PartitionMismatch", "EmptyWorkingDirectory"):
        given().when(refuse(J2, reason, "why")).then(
            JobRejected(**M, job_sluid=J2, reason=reason, detail="why", retryable=False)
        )


def test_a_refusal_naming_a_job_the_shard_has_decides_nothing() -> None:
    given(queued(J1)).when(
        refuse(J1, "KeyMismatch", "a forged copy")
    ).then_nothing()


def test_a_reason_the_intake_does_not_give_decides_nothing() -> None:
    given().when(refuse(J2, "Anything", "x")).then_nothing()


def test_a_refused_test_is_answered_with_the_intake_reason() -> None:
    from scheduler.records import JobTestAnswered

    request = RefuseSubmission(job_sluid=J2, reason="EmptyWorkingDirectory", detail="why",
                               nonce=5, test=True)
    [answer] = given().when(request).facts
    assert isinstance(answer, JobTestAnswered)
    assert (answer.job_sluid, answer.reason, answer.detail, answer.nonce, answer.start_ms) == (
        J2, "EmptyWorkingDirectory", "why", 5, 0)


def test_an_intake_refusal_is_recorded_when_credentials_are_required() -> None:
    from scheduler.records import JobTestAnswered

    required = "AuthRequired: true\n"
    given(config=required).when(refuse(J2, "EmptyWorkingDirectory", "why")).then(
        JobRejected(**M, job_sluid=J2, reason="EmptyWorkingDirectory", detail="why",
                    retryable=False)
    )
    test = RefuseSubmission(job_sluid=J1, reason="KeyMismatch", detail="k", test=True)
    [answer] = given(config=required).when(test).facts
    assert isinstance(answer, JobTestAnswered) and answer.reason == "KeyMismatch"
