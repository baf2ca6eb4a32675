"""Times outside 1970 … 9999 in records any PLAINTEXT client could write (the ledger, the
job-start topic carry any ``long``): the tools that print them say the number instead of
stopping. Red team: ``sluice audit`` stopped with ``year 292278994 is out of range`` on one
forged ``JobRequeued``; ``sluice watch`` and the views' jobcomp records (built inside the
views' fold, which does not catch the notifier's errors) used the same ``datetime`` call."""

from __future__ import annotations

from typing import Any

from cli.watch import format_start
from projections.audit import audit_job
from projections.jobcomp import slurm_time
from projections.replay import Fact, iso

FOREVER = 2**63 - 1


def test_iso_names_a_time_it_cannot_show() -> None:
    assert iso(FOREVER) == f"{FOREVER} ms"
    assert iso(-1) == "-1 ms"
    assert iso(0) == "1970-01-01T00:00:00.000Z"


def test_sluice_audit_explains_a_forged_requeue_eligible_at_the_end_of_time() -> None:
    requeued: dict[str, Any] = {
        "event_sluid": "s009M97XV474BP", "shard": "evil", "shard_seq": 1, "time_ms": 1000,
        "job_sluid": "s009M97YM5XF45", "job_id": 12, "run_sluid": "s009M97YM5XK02",
        "reason": "NODE_FAIL", "expedite": False, "held": False, "begin_time_ms": FOREVER,
        "restart_count": 1, "pending_reason": "BeginTime"}
    entries = audit_job([Fact("JobRequeued", requeued, 0, 0)], "s009M97YM5XF45")
    assert f"eligible from {FOREVER} ms" in entries[0].text


def test_watch_and_jobcomp_print_a_forged_time_without_stopping() -> None:
    line = format_start({"start_ms": FOREVER, "job_id": 1, "job_sluid": "s", "restart_count": 0,
                         "run_sluid": "r", "nodes": ["n1"], "partition": "p", "user": "u",
                         "queue_wait_s": 0})
    assert line.startswith(f"{FOREVER} ms job 1")
    assert slurm_time(FOREVER) == "9999-12-31T23:59:59"
    assert slurm_time(-5) == "1970-01-01T00:00:00"
