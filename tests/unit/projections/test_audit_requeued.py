"""The audit of a job requeued, then cancelled before it ran again (found trying Sluice as a
new user: it said ``job (never ran) ended CANCELLED`` of a job that had run, and that an
operator requeued a job its owner requeued)."""

from __future__ import annotations

from projections.audit import audit_job
from projections.replay import Fact
from tests.unit.projections.ledger_builder import LedgerBuilder


def test_a_cancel_after_a_requeue_is_not_of_a_job_that_never_ran() -> None:
    b = LedgerBuilder(shard="a")
    b.node("n1", cpus=8)
    job = b.queued(name="other")
    run = b.started(job, ["n1"])
    b.kill(job, run, "REQUEUED", ["n1"])
    b.ended(job, run, state="REQUEUED", job_state="COMPLETING", requeue_reason="ADMIN")
    b.requeued(job, run, reason="ADMIN")
    b.ended(job, "", state="CANCELLED")
    never = b.queued(name="never")
    b.ended(never, "", state="CANCELLED")
    facts = [Fact(name, record, 0, offset) for offset, (name, record) in enumerate(b.facts)]
    texts = [e.text for e in audit_job(facts, job)]
    assert texts[-1] == "job (pending again after 1 run) ended CANCELLED, exit code 0:0", texts
    assert "by request (its user or an operator: requeue)" in texts[2], texts
    assert "by request (its user or an operator: requeue)" in texts[4], texts
    assert audit_job(facts, never)[-1].text == "job (never ran) ended CANCELLED, exit code 0:0"
