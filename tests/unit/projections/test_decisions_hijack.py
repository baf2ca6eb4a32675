"""Another user's ``squeue --start``, ``sprio`` or ``sbatch --test-only`` cannot answer for a job.

A ``PlanStarts`` and a ``TestSubmitJob`` name their answers by a SLUID their client mints, and
any user may send one: an attacker who read a victim's job SLUID in ``squeue`` can send one
under it. The waits that poll a job without a nonce (``sbatch --wait``, ``srun``'s wait for its
allocation, ``salloc``'s end of allocation) must still get the job, never that answer.
"""

from __future__ import annotations

from projections.decisions import _decision
from projections.views import Views
from tests.unit.projections.ledger_builder import LedgerBuilder


def _views(b: LedgerBuilder) -> Views:
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    return views


def _victims_job_under_an_attackers_answers(b: LedgerBuilder) -> str:
    b.node("n01")
    job = b.queued(name="victim")
    b.pending(job, "Resources")
    b.fact("StartsPlanned", request_sluid=job, nonce=77, user="mallory", reuses="",
           pending=1, job_sluids=[], job_ids=[], starts_ms=[], nodes=[])
    b.fact("JobTestAnswered", job_sluid=job, nonce=78, user="mallory", job_id=0, start_ms=0,
           nodes="", cpus=0, partition="main", reason="", detail="")
    b.fact("PrioritiesComputed", request_sluid=job, nonce=79, user="mallory", reuses="",
           weights={})
    return job


def test_a_pending_jobs_waits_are_not_answered_by_another_users_requests() -> None:
    b = LedgerBuilder()
    job = _victims_job_under_an_attackers_answers(b)
    views = _views(b)
    assert _decision(views, job, until="started", array=False) is None  # srun keeps waiting
    assert _decision(views, job, until="ended", array=False) is None  # sbatch --wait, salloc
    found = _decision(views, job, until="", array=False)
    assert found is not None and found["job"]["state"] == "PENDING"


def test_an_ended_jobs_wait_gets_the_job() -> None:
    b = LedgerBuilder()
    job = _victims_job_under_an_attackers_answers(b)
    b.ended(job, "", state="CANCELLED")
    found = _decision(_views(b), job, until="ended", array=False)
    assert found is not None and found["job"]["state"] == "CANCELLED"


def test_the_attackers_own_poll_with_its_nonce_still_gets_its_answers() -> None:
    b = LedgerBuilder()
    job = _victims_job_under_an_attackers_answers(b)
    views = _views(b)
    starts = _decision(views, job, until="", array=False, nonce=77)
    assert starts is not None and "starts" in starts
    test = _decision(views, job, until="", array=False, nonce=78)
    assert test is not None and "test" in test
    answer = _decision(views, job, until="", array=False, nonce=79)
    assert answer is not None and "priorities" in answer
