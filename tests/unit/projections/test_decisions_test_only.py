"""sbatch --test-only in the views: a ``JobTestAnswered`` is kept apart from jobs and is the
decision ``GET /v1/decisions`` (and the relay) answers a ``TestSubmitJob`` with."""

from __future__ import annotations

from typing import Any

from projections.decisions import _decision
from projections.relay import parse_relay
from projections.views import Views
from scheduler.records.names import REQUEST_NAMES
from schemas import encode
from tests.unit.projections.ledger_builder import SPEC_DEFAULTS, LedgerBuilder

NONCE, OTHER = 0x1234_5678_9ABC_DEF0, 0x0FED_CBA9_8765_4321


def _views(b: LedgerBuilder) -> Views:
    views = Views()
    for name, record in b.facts:
        views.apply(name, record)
    return views


def _answered(b: LedgerBuilder, sluid: str, **fields: Any) -> None:
    values: dict[str, Any] = {
        "nonce": NONCE, "user": "alice", "job_id": 12, "start_ms": b.now_ms + 60_000,
        "nodes": "n[1-2]", "cpus": 4, "partition": "main", "reason": "", "detail": ""}
    b.fact("JobTestAnswered", job_sluid=sluid, **{**values, **fields})


def test_an_answer_is_no_job_and_is_the_tests_decision() -> None:
    b = LedgerBuilder()
    test = b.sluid()
    _answered(b, test)
    views = _views(b)
    assert views.jobs == {} and views.lookup(test) is None  # squeue, sacct: nothing
    found = _decision(views, test, until="", array=False, nonce=NONCE)
    assert found is not None
    assert {k: found["test"][k] for k in ("job_id", "nodes", "cpus", "partition", "reason")} \
        == {"job_id": 12, "nodes": "n[1-2]", "cpus": 4, "partition": "main", "reason": ""}
    assert found["test"]["start_ms"] == b.now_ms + 60_000
    assert _decision(views, test, until="", array=False, nonce=OTHER) is None


def test_a_refused_test_and_a_denied_one_are_answered() -> None:
    b = LedgerBuilder()
    refused, denied = b.sluid(), b.sluid()
    _answered(b, refused, reason="NodeCountTooLarge", detail="9 > 2", job_id=0)
    b.fact("RequestDenied", request="TestSubmitJob", subject_sluid=denied, requester="bob",
           reason="UserMismatch", detail="x", nonce=NONCE)
    views = _views(b)
    found = _decision(views, refused, until="", array=False, nonce=NONCE)
    assert found is not None and found["test"]["reason"] == "NodeCountTooLarge"
    found = _decision(views, denied, until="", array=False, nonce=NONCE)
    assert found == {"denial": views.denials[denied][-1]}
    assert views.jobs == {}


def test_the_relay_waits_for_a_tests_answer_by_its_nonce() -> None:
    b = LedgerBuilder()
    sluid = b.sluid()
    value = encode("TestSubmitJob", {"job_sluid": sluid, "nonce": NONCE,
                                     "spec": {**SPEC_DEFAULTS, "user": "alice"}})
    parsed = parse_relay({"Sluice-Key": sluid}, value, 100_000, REQUEST_NAMES.__contains__)
    assert not isinstance(parsed, str)
    assert (parsed.name, parsed.nonce) == ("TestSubmitJob", NONCE)


def test_a_test_under_a_jobs_sluid_does_not_shadow_the_job() -> None:
    """Another user's test sent under the SLUID of a running job (a SLUID ``squeue`` shows)
    must not answer for the job: ``sbatch --wait`` (and salloc's watch of its allocation)
    long-poll the job's end by its SLUID alone, and would return at once with the test's
    answer. The test's own nonce still finds the test."""
    b = LedgerBuilder()
    b.node("n01")
    job = b.queued(name="victim")
    b.advance(1000).started(job, ["n01"])
    _answered(b, job, user="mallory")
    views = _views(b)
    assert _decision(views, job, until="ended", array=False) is None  # still running
    found = _decision(views, job, until="", array=False)
    assert found is not None and "job" in found and found["job"]["user"] == "alice"
    found = _decision(views, job, until="", array=False, nonce=NONCE)
    assert found is not None and found["test"]["user"] == "mallory"
