"""sacct's newest record of a requeued job (found trying Sluice as a new user: a job requeued,
then cancelled before it ran again, was still ``REQUEUED`` in ``sacct``)."""

from __future__ import annotations

from typing import Any

from cli.history_cmd import history_rows

RUN = {"run_sluid": "s009M95343GQ02", "restart_count": 0, "start_ms": 1796541124119,
       "end_ms": 1796541129676, "state": "REQUEUED", "exit_code": 0, "signal": 15,
       "nodes": ["node01"], "requeue_reason": "ADMIN"}


def _job(**fields: Any) -> dict[str, Any]:
    """Job 13 as the views held it: requeued by its owner, then cancelled while pending."""
    return {"job_id": 13, "job_sluid": "s009M95343GJ1D", "name": "other", "user": "alice",
            "account": "", "partition": "main", "qos": "", "nodes_min": 1, "cpus_per_task": 1,
            "ntasks": 1, "cpus_per_node": 1, "time_limit_s": 0, "state": "CANCELLED",
            "reason": "None", "priority": 0, "flags": [], "submit_ms": 1796541124119,
            "start_ms": 1796541124119, "end_ms": 1796541131799, "nodes": [], "run_sluid": "",
            "exit_code": 0, "signal": 0, "runs": [dict(RUN)], "array_task_id": -1,
            "array_job_id": 0, "restart_count": 1, **fields}


def _lines(job: dict[str, Any], every_run: bool) -> list[tuple[str, str, str]]:
    rows = history_rows([job], 1796541140000, {}, every_run, steps=True)
    return [(r["job_id"], r["state"], r["exit_code"]) for r in rows]


def test_a_job_cancelled_after_its_requeue_is_cancelled_in_sacct() -> None:
    assert _lines(_job(), every_run=False) == [("13", "CANCELLED", "0:0")]
    assert _lines(_job(), every_run=True) == [
        ("13", "REQUEUED", "0:15"), ("13.batch", "REQUEUED", "0:15"), ("13", "CANCELLED", "0:0")]


def test_a_requeued_job_waiting_to_run_again_is_pending() -> None:
    job = _job(state="PENDING", reason="BeginTime", end_ms=0)
    assert _lines(job, every_run=False) == [("13", "PENDING", "0:0")]
    row = history_rows([job], 1796541140000, {}, False, steps=False)[0]
    assert (row["alloc_cpus"], row["nodelist"], row["elapsed"]) == ("0", "None assigned",
                                                                      "00:00:00")


def test_a_job_in_its_run_is_that_run() -> None:
    job = _job(state="COMPLETED", run_sluid=RUN["run_sluid"],
               runs=[{**RUN, "state": "COMPLETED", "signal": 0}])
    assert _lines(job, every_run=True) == [("13", "COMPLETED", "0:0"),
                                           ("13.batch", "COMPLETED", "0:0")]


def test_sacct_reservation_is_the_jobs_or_empty() -> None:
    from cli.history_cmd import SACCT_FIELDS

    key = SACCT_FIELDS["reservation"][0]
    rows = history_rows([_job(reservation="maint")], 1796541140000, {}, True, steps=True)
    assert {r[key] for r in rows} == {"maint"}  # the job's lines and its steps'
    assert history_rows([_job()], 1796541140000, {}, False, steps=False)[0][key] == ""


def test_a_step_line_has_no_user_as_in_sacct() -> None:
    """sacct prints User, UID, GID and Group for the job's line only (print.c: JOB)."""
    rows = history_rows([_job()], 1796541140000, {}, True, steps=True)
    assert [(r["job_id"], r["user"]) for r in rows] == [
        ("13", "alice"), ("13.batch", ""), ("13", "alice")]


def test_alloc_cpus_is_what_each_node_gave_when_tasks_spread_unevenly() -> None:
    """``-N2 -n5`` on 4-CPU nodes holds 4+1 CPUs: the job 5, its batch step (node01) 4."""
    run = {**RUN, "state": "COMPLETED", "signal": 0, "nodes": ["node01", "node02"], "cpus": 5}
    job = _job(state="COMPLETED", run_sluid=RUN["run_sluid"], runs=[run], ntasks=5,
               nodes_min=2, cpus_per_node=3, nodes=["node01", "node02"],
               alloc={"node01": [4, 0, 0], "node02": [1, 0, 0]})
    rows = history_rows([job], 1796541140000, {}, False, steps=True)
    assert [(r["job_id"], r["alloc_cpus"]) for r in rows] == [("13", "5"), ("13.batch", "4")]
    older = {**run, "run_sluid": "s009M95343GQ01"}  # a run before the newest: its total
    job = {**job, "runs": [older, run]}
    rows = history_rows([job], 1796541140000, {}, True, steps=False)
    assert [r["alloc_cpus"] for r in rows] == ["5", "5"]
