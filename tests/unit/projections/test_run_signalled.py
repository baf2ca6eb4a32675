"""``RunSignalled`` in the projections: the job row keeps the run's last signal (``show job``),
nothing else of the row changes, and the audit says who signalled what."""

from __future__ import annotations

from projections.audit import audit_job
from projections.replay import Fact
from projections.views import Views
from tests.unit.projections.ledger_builder import LedgerBuilder


def signalled_ledger(reason: str = "TIME_LIMIT", requester: str = "") -> LedgerBuilder:
    b = LedgerBuilder(shard="a")
    b.node("n1", cpus=8)
    job = b.queued(name="train")
    run = b.started(job, ["n1"])
    b.advance(5_000)
    b.fact("RunSignalled", job_sluid=job, run_sluid=run, nodes=["n1"], signal=10, scope="BATCH",
           reason=reason, requester=requester)
    return b


def facts_of(b: LedgerBuilder) -> list[Fact]:
    return [Fact(name, record, 0, offset) for offset, (name, record) in enumerate(b.facts)]


def test_the_row_keeps_the_last_signal_and_the_job_keeps_running() -> None:
    b = signalled_ledger("REQUESTED", "alice")
    views, before = Views(), Views()
    for name, record in b.facts:
        views.apply(name, record)
    for name, record in b.facts[:-1]:
        before.apply(name, record)
    [job] = views.jobs.values()
    [old] = before.jobs.values()
    last = b.facts[-1][1]
    assert job["last_signal"] == {"signal": 10, "scope": "BATCH", "reason": "REQUESTED",
                                  "requester": "alice", "time_ms": last["time_ms"]}
    assert {k: v for k, v in job.items() if k != "last_signal"} == old
    assert job["state"] == "RUNNING"


def test_the_audit_says_the_scheduler_sent_the_time_limit_warning() -> None:
    b = signalled_ledger()
    job = b.facts[-1][1]["job_sluid"]
    entries = audit_job(facts_of(b), job)
    assert entries[-1].name == "RunSignalled"
    assert entries[-1].text == (f"signal 10 to run {b.facts[-1][1]['run_sluid']} (BATCH): "
                                "TIME_LIMIT by the scheduler; the job keeps running")
