"""The views fold ``TimeLimitChanged`` (a running job's new limit) and ``JobPrioritySet``."""

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
