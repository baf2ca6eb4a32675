"""``GET /v1/decisions``'s ``until``: decided, started (srun's wait for its allocation), ended."""

from __future__ import annotations

from projections.decisions import _decision
from projections.views import Views
from tests.unit.projections.ledger_builder import LedgerBuilder


def _views(b: LedgerBuilder) -> Views:
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    return views


def test_until_started_waits_while_the_job_is_pending_and_answers_once_it_runs() -> None:
    b = LedgerBuilder()
    b.node("n01")
    job = b.queued(name="srun")
    b.pending(job, "Resources")
    assert _decision(_views(b), job, until="", array=False) is not None
    assert _decision(_views(b), job, until="started", array=False) is None
    run = b.advance(1000).started(job, ["n01"])
    found = _decision(_views(b), job, until="started", array=False)
    assert found is not None and found["job"]["state"] == "RUNNING"
    assert _decision(_views(b), job, until="ended", array=False) is None
    b.ended(job, run)
    found = _decision(_views(b), job, until="ended", array=False)
    assert found is not None and found["job"]["state"] == "COMPLETED"


def test_until_started_answers_for_a_job_that_ended_without_starting() -> None:
    b = LedgerBuilder()
    job = b.queued(name="srun")
    b.ended(job, "", state="CANCELLED")
    found = _decision(_views(b), job, until="started", array=False)
    assert found is not None and found["job"]["state"] == "CANCELLED"
