"""The views show what the facts say the core decided, and fold v1 ledgers sensibly.

Since release v2 a fact carries its decision (docs/records.md, "What the facts decide"): the
views follow it even where no rule they could apply would say so, import nothing of the core's
configuration or requeue rules, and fold a ledger written with release v1 (without those
fields) as ``projections.legacy`` documents.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from projections.job_states import short_state
from projections.slurm_metrics import nodes_families
from projections.stats import node_stats
from projections.views import Views
from scheduler import NodeFailed, RegisterNode
from schemas import decode
from schemas.catalog import RELEASED_DIR, Catalog
from schemas.codec import Codec
from tests.unit.core.gwt import node_sluid
from tests.unit.projections.ledger_builder import SPEC_DEFAULTS, LedgerBuilder
from tests.unit.projections.test_projection_core_contract import EXPEDITE, Core

PROJECTIONS = Path(__file__).resolve().parents[3] / "projections"
V1 = Codec(Catalog(RELEASED_DIR / "v1", released_dir=None))


def fold(b: LedgerBuilder, through_v1: bool = False) -> Views:
    """The views of ``b``'s facts; ``through_v1``: each written with release v1 and decoded."""
    views = Views()
    for written in b.facts:
        views.apply(*(decode(V1.encode(*written)) if through_v1 else written))
    return views


def shown(views: Views, job: str) -> tuple[str, list[str], str, str]:
    row = views.jobs[job]
    return row["state"], row["flags"], row["reason"], short_state(row["state"], row["flags"])


# -- the real core's facts -------------------------------------------------------------------


def test_after_a_node_failure_of_an_expedite_job_the_views_keep_its_nodes_until_the_requeue(
) -> None:
    core = Core(EXPEDITE, 3)
    job = core.submit(nodes_min=2, requeue="expedite")
    core.do()
    run, names = core.run_of(job)
    core.do(NodeFailed(node_sluid=node_sluid(names[0]), name=names[0], reason="", time_ms=0))
    row = core.views.jobs[job]
    assert shown(core.views, job)[:2] == ("PENDING", ["COMPLETING", "EXPEDITING"])
    assert (row["requeue_reason"], row["defer_release"]) == ("NODE_FAIL", True)
    assert row["runs"][0]["requeue_reason"] == "NODE_FAIL"
    core.epilogs(job, run, names[1:])  # the last epilog: the requeue follows at once
    assert shown(core.views, job) == ("PENDING", ["EXPEDITING"], "None", "EX")
    assert core.views.nodes[names[1]]["jobs"] == []


def test_a_held_requeue_shows_special_exit_held_until_released() -> None:
    core = Core(EXPEDITE, 2)
    job = core.submit(nodes_min=2)
    core.do()
    run, names = core.run_of(job)
    core.exit(job, 4)  # RequeueExitHold
    assert shown(core.views, job)[:2] == ("PENDING", ["COMPLETING"])
    assert core.views.jobs[job]["requeue_reason"] == "SPECIAL_EXIT"
    core.epilogs(job, run, names[:1])
    assert core.views.nodes[names[0]]["jobs"] == []  # freed at its epilog
    assert core.views.nodes[names[1]]["jobs"] == [core.views.jobs[job]["job_id"]]
    core.epilogs(job, run, names[1:])
    assert shown(core.views, job) == ("PENDING", ["SPECIAL_EXIT"], "JobHeldUser", "SE")


def test_a_requeue_exit_is_completing_then_pending_until_its_begin_time() -> None:
    core = Core(EXPEDITE, 2)
    job = core.submit(nodes_min=1)
    core.do()
    run, names = core.run_of(job)
    core.exit(job, 3)  # RequeueExit
    assert shown(core.views, job)[:2] == ("PENDING", ["COMPLETING"])
    assert core.views.jobs[job]["runs"][0]["state"] == "FAILED"
    core.epilogs(job, run, names)
    assert shown(core.views, job) == ("PENDING", [], "BeginTime", "PD")
    assert core.views.jobs[job]["requeue_reason"] == "REQUEUE_EXIT"


def test_the_views_show_the_resolved_partition_time_limit_and_allocation() -> None:
    config = ("Partitions:\n  - PartitionName: batch\n    Default: YES\n    DefaultTime: 90\n")
    core = Core(config, 0)
    core.do(RegisterNode(node_sluid=node_sluid("n1"), name="n1", cpus=4, mem_mb=8000))
    job = core.submit(exclusive=True)
    row = core.views.jobs[job]
    assert (row["partition"], row["time_limit_s"], row["requeue"]) == ("batch", 5400, "yes")
    core.do()
    assert core.views.jobs[job]["alloc"] == {"n1": [4, 8000, 0]}
    assert core.views.nodes["n1"]["state"] == "ALLOCATED"


# -- facts the views follow, whatever a rule would say ---------------------------------------


def test_the_views_follow_the_jobs_ended_decision_not_a_rule_of_their_own() -> None:
    b = LedgerBuilder()
    b.node("n1", cpus=8)
    b.node("n2", cpus=8)
    requeued = b.queued()
    run = b.started(requeued, ["n1"])
    b.ended(requeued, run, "FAILED", exit_code=7, job_state="COMPLETING",
            requeue_reason="REQUEUE_EXIT", held_nodes=["n1"])  # no RequeueExit lists known
    final = b.queued(requeue="yes")
    other = b.started(final, ["n2"])
    b.ended(final, other, "NODE_FAIL", job_state="NODE_FAIL")  # no requeue, whatever the policy
    views = fold(b)
    assert shown(views, requeued)[:2] == ("PENDING", ["COMPLETING"])
    assert views.jobs[requeued]["requeue_reason"] == "REQUEUE_EXIT"
    assert views.nodes["n1"]["jobs"] == [views.jobs[requeued]["job_id"]]
    assert shown(views, final)[:2] == ("NODE_FAIL", [])
    assert views.nodes["n2"]["jobs"] == []


def test_the_views_show_the_queued_decision_and_the_started_allocation() -> None:
    b = LedgerBuilder()
    b.node("n1", cpus=8)
    job = b.fact("JobQueued", job_sluid=b.sluid(), job_id=1,
                 spec={**_spec(), "partition": "", "account": ""},
                 partition="gpu", account="ml", time_limit_s=600, requeue="no", cpus_per_node=1)
    b.job_ids[job["job_sluid"]] = 1
    b.submitted[job["job_sluid"]] = b.now_ms
    b.started(job["job_sluid"], ["n1"], partition="gpu", alloc_cpus=[8], alloc_mem_mb=[0],
              alloc_gpus=[0])
    views = fold(b)
    row = views.jobs[job["job_sluid"]]
    assert (row["partition"], row["account"], row["time_limit_s"], row["requeue"]) == (
        "gpu", "ml", 600, "no")
    assert views.nodes["n1"]["state"] == "ALLOCATED"  # the fact's 8 CPUs, not the spec's 1
    assert node_stats(views.nodes, {1: row})[0].cpus_alloc == 8


def _spec() -> dict[str, Any]:
    return dict(SPEC_DEFAULTS)


def test_no_module_of_the_projections_imports_the_cores_configuration_or_rules() -> None:
    forbidden = ("scheduler.config.cluster", "scheduler.requeue.rules", "scheduler.jobs.admission",
                 "scheduler.topology.config", "scheduler.scheduling.placement")
    found = []
    for path in sorted(PROJECTIONS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: {n}" for n in names if n.startswith(forbidden)]
    assert found == []
    assert not (PROJECTIONS / "requeue_rules.py").exists()
    assert not (PROJECTIONS / "config_view.py").exists()


# -- ledgers of release v1 --------------------------------------------------------------------


def _v1_node_failure() -> tuple[LedgerBuilder, str, str]:
    b = LedgerBuilder(legacy=True)
    b.node("n1", cpus=8)
    b.node("n2", cpus=8)
    job = b.queued(nodes_min=2, ntasks=4, cpus_per_task=1, mem_per_node_mb=100)
    run = b.started(job, ["n1", "n2"])
    return b, job, run


def test_a_v1_ledger_shows_the_spec_as_written_and_the_default_partition() -> None:
    b, job, _run = _v1_node_failure()
    views = fold(b, through_v1=True)
    row = views.jobs[job]
    assert (row["partition"], row["requeue"], row["time_limit_s"]) == ("main", "", 0)
    assert row["alloc"] == {"n1": [2, 100, 0], "n2": [2, 100, 0]}  # 4 tasks over 2 nodes
    assert views.nodes["n1"]["state"] == "MIXED"
    samples = {f.name: v for f in nodes_families(views) for _s, labels, v in f.samples
               if not labels}
    assert samples["slurm_nodes_mixed"] == 2


def test_a_v1_node_failure_shows_the_end_until_later_facts_tell_the_requeue() -> None:
    b, job, run = _v1_node_failure()
    b.node_state("n1", "DOWN", "Not responding")
    b.kill(job, run, "NODE_FAIL", ["n2"])
    b.ended(job, run, "NODE_FAIL", reason="Not responding")
    assert shown(fold(b, through_v1=True), job)[0] == "NODE_FAIL"  # the fact says no more
    b.epilog(job, run, "n2")  # an awaited epilog: the core is requeueing the run
    views = fold(b, through_v1=True)
    assert shown(views, job)[:2] == ("PENDING", ["COMPLETING"])
    b.requeued(job, run, "NODE_FAIL", begin_time_ms=b.now_ms + 121_000)
    views = fold(b, through_v1=True)
    assert shown(views, job) == ("PENDING", [], "BeginTime", "PD")
    assert views.nodes["n2"]["jobs"] == [] and views.nodes["n2"]["state"] == "IDLE"


def test_a_v1_operators_requeue_is_completing_then_pending_held() -> None:
    b = LedgerBuilder(legacy=True)
    b.node("n1")
    job = b.queued()
    run = b.started(job, ["n1"])
    b.kill(job, run, "REQUEUE_HOLD", ["n1"])
    b.ended(job, run, "REQUEUED")
    assert shown(fold(b, through_v1=True), job)[:2] == ("PENDING", ["COMPLETING"])
    b.epilog(job, run, "n1")
    b.requeued(job, run, "ADMIN", held=True)
    assert shown(fold(b, through_v1=True), job) == ("PENDING", [], "JobHeldUser", "PD")
