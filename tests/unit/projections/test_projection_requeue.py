"""Requeues in the views, as squeue, scontrol and slurmctld's statistics show them.

A run whose requeue is pending leaves its job PENDING + COMPLETING (squeue ``CG``) until
``JobRequeued``: never shown nor counted as finished. ``RequeueExitHold`` requeues it
PENDING + SPECIAL_EXIT (``SE``, reason ``JobHeldUser``) until it is released. The ledgers are
written fact by fact as the core writes them (docs/scheduling.md, "Facts, in order").
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from projections.exposition import Family
from projections.extras import Dispatcher, _restore
from projections.http import _matches
from projections.job_states import short_state, shown_state
from projections.metrics import _queue_families
from projections.replay import format_queue
from projections.slurm_metrics import jobs_families, nodes_families
from projections.views import Views
from tests.unit.projections.ledger_builder import LedgerBuilder

CODES = "RequeueExit: 3\nRequeueExitHold: 4\n"


class Folded:
    """The views of a growing ledger: ``step`` folds the facts written since the last step."""

    def __init__(self, b: LedgerBuilder) -> None:
        self.b, self.views, self.done = b, Views(), 0

    def step(self) -> Views:
        for name, record in self.b.facts[self.done:]:
            self.views.apply(name, record)
        self.done = len(self.b.facts)
        return self.views

    def job(self, sluid: str) -> dict[str, Any]:
        return self.step().jobs[sluid]

    def shown(self, sluid: str) -> tuple[str, list[str], str, str, str]:
        """(base state, flags, reason, scontrol's JobState, squeue's ST) of a job."""
        job = self.job(sluid)
        return (job["state"], job["flags"], job["reason"], shown_state(job["state"], job["flags"]),
                short_state(job["state"], job["flags"]))

    def counts(self, *names: str) -> dict[str, float]:
        """``slurm_jobs_<name>`` (``jobs`` for ``slurm_jobs``) from the OpenMetrics families."""
        got = _samples(jobs_families(self.step()))
        return {n: got["slurm_jobs" if n == "jobs" else f"slurm_jobs_{n}"] for n in names}

    def node_counts(self, *names: str) -> dict[str, float]:
        got = _samples(nodes_families(self.step()))
        return {n: got[f"slurm_nodes_{n}"] for n in names}

    def nodes(self) -> dict[str, tuple[str, list[int]]]:
        return {n: (r["state"], r["jobs"]) for n, r in sorted(self.step().nodes.items())}


def _samples(families: list[Family]) -> dict[str, float]:
    return {family.name + suffix: value for family in families
            for suffix, labels, value in family.samples if not labels}


def _cluster(names: tuple[str, ...], config: str = "") -> LedgerBuilder:
    b = LedgerBuilder()
    if config:
        b.config("cluster", config)
    for name in names:
        b.node(name, cpus=8)
    return b


PENDING_ONLY = {"pending": 1, "completing": 0, "finished": 0, "started": 0, "jobs": 1}


def test_a_node_failure_requeue_is_completing_until_the_last_epilog_then_pending() -> None:
    b = _cluster(("n1", "n2", "n3"))
    job = b.queued(name="train", nodes_min=3, ntasks=3, cpus_per_task=8)
    run = b.started(job, ["n1", "n2", "n3"])
    views = Folded(b)
    assert views.shown(job) == ("RUNNING", [], "None", "RUNNING", "R")
    assert views.nodes()["n2"] == ("ALLOCATED", [1])

    b.advance(10_000)
    b.node_state("n1", "DOWN", "Not responding")
    b.kill(job, run, "NODE_FAIL", ["n2", "n3"])
    b.ended(job, run, "NODE_FAIL", reason="Not responding")
    row = views.job(job)
    assert views.shown(job) == ("PENDING", ["COMPLETING"], "Not responding", "COMPLETING",
                                "CG")
    assert row["requeue_reason"] == "NODE_FAIL" and row["nodes"] == ["n1", "n2", "n3"]
    assert (row["runs"][0]["state"], row["runs"][0]["requeue_reason"]) == ("NODE_FAIL",
                                                                          "NODE_FAIL")
    assert views.counts("pending", "completing", "node_failed", "finished", "started",
                        "jobs") == {"pending": 1, "completing": 1, "node_failed": 0,
                                    "finished": 0, "started": 0, "jobs": 1}
    # the DOWN node is given back at once, the others when their epilogs are in
    assert views.nodes() == {"n1": ("DOWN", []), "n2": ("ALLOCATED", [1]),
                             "n3": ("ALLOCATED", [1])}
    assert views.node_counts("completing", "idle", "down") == {"completing": 2, "idle": 2,
                                                               "down": 1}
    line = format_queue(views.step(), b.now_ms)[1].split()
    assert (line[4], line[-1]) == ("CG", "n1,n2,n3")  # squeue lists a completing job's nodes
    reasons, _age = _queue_families(views.step(), b.now_ms / 1000)
    assert reasons.samples == []  # not queued yet: no pending reason "Not responding"

    b.advance(2_000)
    b.epilog(job, run, "n2")
    assert views.shown(job)[4] == "CG"
    assert views.nodes()["n2"] == ("IDLE", []) and views.nodes()["n3"] == ("ALLOCATED", [1])

    b.epilog(job, run, "n3")
    b.requeued(job, run, "NODE_FAIL", begin_time_ms=b.now_ms + 121_000)
    assert views.shown(job) == ("PENDING", [], "BeginTime", "PENDING", "PD")
    assert views.job(job)["restart_count"] == 1 and views.job(job)["nodes"] == []
    assert views.counts(*PENDING_ONLY) == PENDING_ONLY
    assert views.nodes()["n3"] == ("IDLE", [])

    b.advance(121_000)
    second = b.started(job, ["n2", "n3"], restart_count=1)
    b.advance(1_000)
    b.ended(job, second, "COMPLETED")
    assert views.shown(job)[:2] == ("COMPLETED", [])
    assert views.counts("completed", "finished", "pending") == {"completed": 1, "finished": 1,
                                                                "pending": 0}


def test_an_expedited_node_failure_keeps_every_node_until_the_requeue() -> None:
    b = _cluster(("n1", "n2", "n3"))
    job = b.queued(nodes_min=2, requeue="expedite")
    run = b.started(job, ["n1", "n2"])
    b.node_state("n1", "DOWN", "Not responding")
    b.kill(job, run, "NODE_FAIL", ["n2"])
    b.ended(job, run, "NODE_FAIL", reason="Not responding")
    b.expediting(job, run, "NODE_FAIL")
    views = Folded(b)

    assert views.shown(job) == ("PENDING", ["COMPLETING", "EXPEDITING"], "Not responding",
                                "COMPLETING", "CG")
    assert views.counts("pending", "completing", "expediting", "node_failed", "finished") == {
        "pending": 1, "completing": 1, "expediting": 1, "node_failed": 0, "finished": 0}

    b.epilog(job, run, "n2")
    assert views.nodes()["n2"] == ("MIXED", [1])  # the expediting job defers the release

    b.requeued(job, run, "NODE_FAIL", expedite=True)
    assert views.shown(job) == ("PENDING", ["EXPEDITING"], "None", "EXPEDITING", "EX")
    assert views.counts("pending", "completing", "expediting") == {
        "pending": 1, "completing": 0, "expediting": 1}
    assert views.nodes()["n2"] == ("IDLE", [])

    b.started(job, ["n2", "n3"], restart_count=1)
    assert views.shown(job)[:2] == ("RUNNING", [])


def test_a_job_that_may_not_be_requeued_ends_node_fail_at_once() -> None:
    b = _cluster(("n1", "n2"))
    job = b.queued(nodes_min=2, requeue="no")
    run = b.started(job, ["n1", "n2"])
    b.node_state("n1", "DOWN", "Not responding")
    b.kill(job, run, "NODE_FAIL", ["n2"])
    b.ended(job, run, "NODE_FAIL", reason="Not responding")
    views = Folded(b)

    assert views.shown(job) == ("NODE_FAIL", [], "Not responding", "NODE_FAIL", "NF")
    assert views.counts("node_failed", "finished", "pending") == {"node_failed": 1,
                                                                  "finished": 1, "pending": 0}
    assert views.nodes()["n2"] == ("IDLE", [])


def test_the_cluster_job_requeue_zero_makes_jobs_without_a_choice_end_for_good() -> None:
    b = _cluster(("n1",), "JobRequeue: 0\n")
    job = b.queued()
    run = b.started(job, ["n1"])
    b.node_state("n1", "DOWN", "Not responding")
    b.ended(job, run, "NODE_FAIL")
    assert Folded(b).shown(job)[0] == "NODE_FAIL"


def test_an_exit_code_in_requeue_exit_is_completing_then_pending_again() -> None:
    b = _cluster(("n1", "n2"), CODES)
    job = b.queued()
    other = b.queued(requeue="no")
    run, other_run = b.started(job, ["n1"]), b.started(other, ["n2"])
    b.advance(5_000)
    b.ended(job, run, "FAILED", exit_code=3)
    b.ended(other, other_run, "FAILED", exit_code=3)  # --no-requeue ignores the lists
    views = Folded(b)

    assert views.shown(job) == ("PENDING", ["COMPLETING"], "None", "COMPLETING", "CG")
    assert views.job(job)["requeue_reason"] == "REQUEUE_EXIT"
    assert views.job(job)["runs"][0]["state"] == "FAILED"  # the run keeps its real end
    assert views.shown(other)[0] == "FAILED"
    assert views.counts("failed", "finished", "pending", "completing") == {
        "failed": 1, "finished": 1, "pending": 1, "completing": 1}
    assert views.nodes()["n1"] == ("MIXED", [1])

    b.epilog(job, run, "n1")
    assert views.nodes()["n1"] == ("IDLE", [])
    b.requeued(job, run, "REQUEUE_EXIT", begin_time_ms=b.now_ms + 121_000)
    assert views.shown(job) == ("PENDING", [], "BeginTime", "PENDING", "PD")
    assert views.job(job)["requeue_reason"] == "REQUEUE_EXIT"
    # pending again: no start of its own (scontrol's RunTime 0, squeue's START_TIME not the
    # old run's), eligible when the requeue says; the run keeps its start (sacct -D)
    assert views.job(job)["start_ms"] == 0
    assert views.job(job)["begin_ms"] == b.now_ms + 121_000
    assert views.job(job)["runs"][0]["start_ms"] > 0


def test_an_exit_code_not_listed_ends_the_job() -> None:
    b = _cluster(("n1",), CODES)
    job = b.queued()
    run = b.started(job, ["n1"])
    b.ended(job, run, "FAILED", exit_code=5)
    assert Folded(b).shown(job) == ("FAILED", [], "None", "FAILED", "F")


def test_requeue_exit_hold_shows_special_exit_held_until_released() -> None:
    b = _cluster(("n1", "n2"), CODES)
    job = b.queued(name="train", nodes_min=2)
    run = b.started(job, ["n1", "n2"])
    b.pending(b.queued(), "Resources")
    b.advance(5_000)
    b.ended(job, run, "FAILED", exit_code=4)
    views = Folded(b)
    assert views.shown(job) == ("PENDING", ["COMPLETING"], "None", "COMPLETING", "CG")
    assert views.job(job)["requeue_reason"] == "SPECIAL_EXIT"
    assert views.counts("pending", "completing", "hold", "failed", "finished") == {
        "pending": 2, "completing": 1, "hold": 0, "failed": 0, "finished": 0}

    b.epilog(job, run, "n1", ok=False, detail="epilog exited 2")
    b.node_state("n1", "DRAIN", "Epilog error")
    b.epilog(job, run, "n2")
    b.requeued(job, run, "SPECIAL_EXIT", held=True, begin_time_ms=b.now_ms + 121_000)
    assert views.shown(job) == ("PENDING", ["SPECIAL_EXIT"], "JobHeldUser", "SPECIAL_EXIT",
                                "SE")
    assert views.job(job)["priority"] == 0
    assert views.counts("pending", "hold", "completing", "requeued", "finished") == {
        "pending": 2, "hold": 1, "completing": 0, "requeued": 0, "finished": 0}
    line = next(x for x in format_queue(views.step(), b.now_ms) if x.split()[0] == "1")
    assert line.split()[4] == "SE" and line.endswith("(JobHeldUser)")
    assert [j for j, row in views.step().jobs.items()
            if _matches(row, {"state": ["SPECIAL_EXIT"]}, ("state",))] == [job]  # GET /v1/jobs

    b.updated(job, name="renamed")  # the owner updates the held job
    assert views.shown(job)[:3] == ("PENDING", ["SPECIAL_EXIT"], "JobHeldUser")
    assert views.job(job)["name"] == "renamed" and len(views.job(job)["runs"]) == 1

    b.released(job)
    assert views.shown(job) == ("PENDING", [], "None", "PENDING", "PD")
    assert views.counts("pending", "hold") == {"pending": 2, "hold": 0}


def test_a_cancel_while_the_requeue_waits_ends_the_job_and_frees_its_nodes() -> None:
    b = _cluster(("n1", "n2"), CODES)
    job = b.queued(nodes_min=2)
    run = b.started(job, ["n1", "n2"])
    b.ended(job, run, "COMPLETED", exit_code=3)
    views = Folded(b)
    assert views.shown(job)[:2] == ("PENDING", ["COMPLETING"])
    b.ended(job, "", "CANCELLED")
    assert views.shown(job) == ("CANCELLED", [], "None", "CANCELLED", "CA")
    assert views.nodes() == {"n1": ("IDLE", []), "n2": ("IDLE", [])}
    assert views.job(job)["runs"][0]["state"] == "COMPLETED"


def test_an_operators_requeue_is_completing_then_pending_held() -> None:
    b = _cluster(("n1",))
    job = b.queued()
    run = b.started(job, ["n1"])
    b.kill(job, run, "REQUEUE_HOLD", ["n1"])
    views = Folded(b)
    assert views.shown(job)[:2] == ("RUNNING", ["COMPLETING"])
    b.ended(job, run, "REQUEUED")
    assert views.shown(job)[:2] == ("PENDING", ["COMPLETING"])
    assert views.job(job)["requeue_reason"] == "ADMIN"
    b.epilog(job, run, "n1")
    b.requeued(job, run, "ADMIN", held=True)
    assert views.shown(job) == ("PENDING", [], "JobHeldUser", "PENDING", "PD")


def test_a_kill_in_force_wins_over_the_requeue() -> None:
    b = _cluster(("n1", "n2"))
    job = b.queued(nodes_min=2)
    run = b.started(job, ["n1", "n2"])
    b.kill(job, run, "CANCELLED", ["n1", "n2"])
    b.node_state("n1", "DOWN", "Not responding")
    b.ended(job, run, "NODE_FAIL")
    assert Folded(b).shown(job)[:2] == ("NODE_FAIL", [])


def test_an_awaited_epilog_marks_a_requeue_the_views_could_not_foresee() -> None:
    """Without the configuration's lists (a text the views could not read), the first awaited
    epilog tells the requeue: the core reports only awaited epilogs as ok."""
    b = _cluster(("n1", "n2"))
    job = b.queued(nodes_min=2)
    run = b.started(job, ["n1", "n2"])
    b.ended(job, run, "FAILED", exit_code=3)
    views = Folded(b)
    assert views.shown(job)[0] == "FAILED"
    b.epilog(job, run, "n1")
    assert views.shown(job)[:2] == ("PENDING", ["COMPLETING"])
    b.epilog(job, run, "n2")
    b.requeued(job, run, "REQUEUE_EXIT", begin_time_ms=b.now_ms + 121_000)
    assert views.shown(job)[:3] == ("PENDING", [], "BeginTime")


def test_a_failed_epilog_of_a_run_that_ended_for_good_changes_nothing() -> None:
    b = _cluster(("n1",))
    job = b.queued()
    run = b.started(job, ["n1"])
    b.ended(job, run, "FAILED", exit_code=1)
    b.epilog(job, run, "n1", ok=False, detail="epilog exited 2")
    assert Folded(b).shown(job)[0] == "FAILED"


def test_each_shard_judges_its_runs_by_its_own_configuration() -> None:
    b = _cluster(("n1", "n2"))
    b.fact("ConfigApplied", shard="c2", config_sluid=b.sluid(), kind="cluster",
           digest="0" * 64, text=CODES)
    job = b.queued()
    run = b.started(job, ["n1"])
    b.ended(job, run, "FAILED", exit_code=3)  # shard c1 has not applied the lists yet
    assert Folded(b).shown(job)[0] == "FAILED"


class _Store:
    """The few calls of the projections' RocksDB store the extras make."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}

    def write(self, puts: dict[bytes, bytes], deletes: list[bytes] | None = None) -> None:
        self.data.update(puts)
        for key in deletes or []:
            self.data.pop(key, None)

    def get(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def items(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        return [(k, v) for k, v in self.data.items() if k.startswith(prefix)]


TOPOLOGY = "BlockName=b1 Nodes=n1\nBlockSizes=1\n"


def test_what_the_views_learnt_from_configurations_survives_a_restart_of_the_projections() -> None:
    b = _cluster(("n1",), "Partitions:\n  - PartitionName: gpu\n    Default: YES\n")
    b.config("topology", TOPOLOGY)
    live = SimpleNamespace(views=Views(), store=_Store())
    dispatch = Dispatcher(live, [])  # type: ignore[arg-type]
    for name, record in b.facts:
        live.views.apply(name, record)
        dispatch(name, record, 0)
    assert (live.views.default_partition, live.views.blocks) == ("gpu", {"n1": "b1"})
    restarted = SimpleNamespace(views=Views(), store=live.store)
    restarted.views.shard_seq = dict(live.views.shard_seq)
    _restore(restarted)  # type: ignore[arg-type]
    assert (restarted.views.default_partition, restarted.views.blocks) == ("gpu", {"n1": "b1"})


def test_a_store_written_with_requeue_rules_still_restores() -> None:
    store = _Store()
    store.write({b"extras:views-config": b'{"default_partition": "gpu", "blocks": {}, '
                                         b'"requeue_rules": {"c1": {"job_requeue": false, '
                                         b'"requeue_exit": [3], "requeue_exit_hold": []}}}'})
    restarted = SimpleNamespace(views=Views(), store=store)
    _restore(restarted)  # type: ignore[arg-type]
    assert restarted.views.default_partition == "gpu"
