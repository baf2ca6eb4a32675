"""The views fold ``TimeLimitChanged`` (a running job's new limit), ``JobDetailsChanged`` (its new
name, comment, mail settings) and ``JobPrioritySet``."""

from __future__ import annotations

from projections.replay import views_at
from tests.unit.projections.ledger_builder import LedgerBuilder
from tests.unit.projections.test_replay_fold import facts_of


def test_a_running_jobs_new_limit_and_a_pending_jobs_set_priority_are_shown() -> None:
    b = LedgerBuilder(shard="a", start_ms=1_767_225_600_000)
    b.config("cluster", "Partitions:\n  - PartitionName: main\n    Default: YES\n")
    b.node("a-n1", cpus=8)
    running = b.queued(name="long")
    run = b.started(running, ["a-n1"])
    waiting = b.queued(name="next")
    b.fact("TimeLimitChanged", job_sluid=running, run_sluid=run, nodes=["a-n1"],
           time_limit_s=7_200, previous_s=3_600, requester="")
    b.fact("TimeLimitChanged", job_sluid=running, run_sluid=b.sluid(), nodes=["a-n1"],
           time_limit_s=5, previous_s=7_200, requester="")  # another run's: not this one's
    b.fact("JobPrioritySet", job_sluid=waiting, priority=1_000)
    views = views_at(facts_of(b))
    assert views.jobs[running]["time_limit_s"] == 7_200
    assert views.jobs[waiting]["priority"] == 1_000


def test_a_running_jobs_new_name_and_comment_are_shown_and_another_runs_are_not() -> None:
    b = LedgerBuilder(shard="a", start_ms=1_767_225_600_000)
    b.config("cluster", "Partitions:\n  - PartitionName: main\n    Default: YES\n")
    b.node("a-n1", cpus=8)
    running = b.queued(name="long")
    run = b.started(running, ["a-n1"])
    b.fact("JobDetailsChanged", job_sluid=running, run_sluid=run, name="eval", comment="c2",
           mail_type="END", mail_user="a@b", array="", changed=["comment", "mail_type", "mail_user",
                                                      "name"], requester="alice")
    b.fact("JobDetailsChanged", job_sluid=running, run_sluid=b.sluid(), name="stale",
           comment="", mail_type="", mail_user="", array="", changed=["name"], requester="")
    row = views_at(facts_of(b)).jobs[running]
    assert (row["name"], row["comment"], row["mail_type"], row["mail_user"]) == (
        "eval", "c2", "END", "a@b")


def test_a_running_array_tasks_new_throttle_is_shown() -> None:
    b = LedgerBuilder(shard="a", start_ms=1_767_225_600_000)
    b.config("cluster", "Partitions:\n  - PartitionName: main\n    Default: YES\n")
    b.node("a-n1", cpus=8)
    task = b.queued(name="task", array="1-4%1")
    run = b.started(task, ["a-n1"])
    b.fact("JobDetailsChanged", job_sluid=task, run_sluid=run, name="task", comment="",
           mail_type="", mail_user="", array="1-4%3", changed=["array"], requester="")
    assert views_at(facts_of(b)).jobs[task]["array_limit"] == 3


def test_a_running_jobs_nice_requeue_and_start_priority_are_shown() -> None:
    """Slurm shows a running job's priority (the one it started with) and its Nice= and
    Requeue= updates; a fact without them (v7) changes neither."""
    b = LedgerBuilder(shard="a", start_ms=1_767_225_600_000)
    b.config("cluster", "Partitions:\n  - PartitionName: main\n    Default: YES\n")
    b.node("a-n1", cpus=8)
    running = b.queued(name="long")
    run = b.started(running, ["a-n1"], priority=4_242)
    b.fact("JobDetailsChanged", job_sluid=running, run_sluid=run, name="long", comment="",
           mail_type="", mail_user="", array="", nice=7, requeue="no",
           changed=["nice", "requeue"], requester="alice")
    b.fact("JobDetailsChanged", job_sluid=running, run_sluid=run, name="long", comment="x",
           mail_type="", mail_user="", array="", changed=["comment"], requester="alice")
    row = views_at(facts_of(b)).jobs[running]
    assert (row["priority"], row["nice"], row["requeue"], row["comment"]) == (4_242, 7, "no", "x")
