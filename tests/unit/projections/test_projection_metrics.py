"""The OpenMetrics exporter: Slurm's names and counting rules, from a folded ledger."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from projections.exposition import Family, Histogram, render
from projections.metrics import FactMetrics
from projections.slurm_metrics import (
    jobs_families,
    nodes_families,
    partitions_families,
    users_accounts_families,
)
from projections.stats import MIN_JOB_AGE_MS
from projections.views import Views
from tests.unit.projections.ledger_builder import LedgerBuilder

SLURM_JOB_NAMES = [
    "slurm_jobs", *(f"slurm_jobs_{n}" for n in (
        "bootfail", "cancelled", "completed", "completing", "configuring", "deadline",
        "expediting", "failed", "fed_requeued", "finished", "hold", "node_failed", "outofmemory",
        "pending", "powerup_node", "preempted", "requeued", "resizing", "revoked", "running",
        "signaling", "stageout", "started", "suspended", "timeout", "cpus_alloc",
        "memory_alloc", "gpus_alloc", "nodes_alloc")),
]
SLURM_NODE_NAMES = [
    *(f"slurm_node_{n}" for n in (
        "cpus", "cpus_alloc", "cpus_effective", "cpus_idle", "gpus", "gpus_alloc",
        "memory_bytes", "memory_alloc_bytes", "memory_effective_bytes", "memory_free_bytes")),
    "slurm_nodes", *(f"slurm_nodes_{n}" for n in (
        "alloc", "blocked", "completing", "cloud", "down", "drain", "drained", "draining",
        "dyn_future", "dyn_normal", "external", "fail", "future", "idle", "invalid_reg", "maint",
        "mixed", "noresp", "planned", "power_down", "power_up", "powered_down", "powering_up",
        "reboot_issued", "reboot_req", "resv", "unknown")),
]


def fold(builder: LedgerBuilder) -> tuple[Views, FactMetrics]:
    views = Views()
    metrics = FactMetrics(views, clock=lambda: builder.now_ms / 1000)
    for name, record in builder.facts:
        if views.apply(name, record) is not None:
            metrics.on_fact(name, record, builder.now_ms)
    return views, metrics


def samples(families: list[Family]) -> dict[str, float]:
    """``name{labels}`` → value, labels written as in the exposition."""
    out = {}
    for family in families:
        for suffix, labels, value in family.samples:
            text = ",".join(f'{k}="{v}"' for k, v in labels)
            out[family.name + suffix + (f"{{{text}}}" if text else "")] = value
    return out


def gpu_cluster() -> LedgerBuilder:
    """4 GPU nodes (2 in block b1 via a feature), 5 jobs in every interesting state."""
    b = LedgerBuilder()
    for i in range(1, 5):
        b.node(f"g{i}", cpus=8, gpus=4, partitions=("gpu",),
               features=("block=b1",) if i <= 2 else ())
    running = b.queued(user="alice", account="ml", partition="gpu", nodes_min=2, ntasks=4,
                       gpus_per_node=2, mem_per_node_mb=1024)
    b.advance(30_000)
    b.started(running, ["g1", "g2"], partition="gpu")
    waiting = b.queued(user="bob", account="phys", partition="gpu", nodes_min=3, nodes_max=4)
    b.pending(waiting, "Resources")
    held = b.queued(user="bob", partition="gpu", nodes_min=2)
    b.held(held)
    done = b.queued(user="carol", partition="gpu")
    b.advance(1_000)
    run = b.started(done, ["g3"], partition="gpu")
    b.advance(5_000)
    b.ended(done, run, "FAILED", exit_code=3)
    b.node_state("g4", "DRAIN", "maintenance")
    b.cycle(0, 9, pending=2, running=1, started=1)
    return b


def test_job_families_count_base_states_and_flags_independently_as_slurm_does() -> None:
    views, _ = fold(gpu_cluster())
    got = samples(jobs_families(views))

    assert got["slurm_jobs"] == 4
    assert got["slurm_jobs_pending"] == 2
    assert got["slurm_jobs_hold"] == 1
    assert got["slurm_jobs_running"] == 1
    assert got["slurm_jobs_failed"] == 1
    assert got["slurm_jobs_finished"] == 1
    assert got["slurm_jobs_started"] == 2
    assert got["slurm_jobs_cpus_alloc"] == 4  # 4 tasks over 2 nodes
    assert got["slurm_jobs_gpus_alloc"] == 4
    assert got["slurm_jobs_memory_alloc"] == 2 * 1024 * 1024 * 1024
    assert got["slurm_jobs_nodes_alloc"] == 2
    assert [f.name for f in jobs_families(views)] == SLURM_JOB_NAMES


def test_an_ended_job_is_forgotten_min_job_age_after_it_ended() -> None:
    b = gpu_cluster()
    b.advance(MIN_JOB_AGE_MS + 1)
    b.cycle(10, 10)
    views, _ = fold(b)
    got = samples(jobs_families(views))
    assert got["slurm_jobs"] == 3
    assert got["slurm_jobs_failed"] == 0


def test_node_families_report_allocation_and_infer_mixed_and_drained() -> None:
    views, _ = fold(gpu_cluster())
    got = samples(nodes_families(views))

    assert got['slurm_node_gpus_alloc{node="g1"}'] == 2
    assert got['slurm_node_cpus_alloc{node="g1"}'] == 2
    assert got['slurm_node_cpus_idle{node="g1"}'] == 6
    assert got['slurm_node_memory_alloc_bytes{node="g1"}'] == 1024 * 1024 * 1024
    assert got["slurm_nodes"] == 4
    assert got["slurm_nodes_mixed"] == 2
    assert got["slurm_nodes_idle"] == 2  # g3 (its job ended) and g4 (drained)
    assert got["slurm_nodes_drain"] == 1 and got["slurm_nodes_drained"] == 1
    assert got["slurm_nodes_draining"] == 0
    assert sorted(f.name for f in nodes_families(views)) == sorted(SLURM_NODE_NAMES)


def test_partition_families_are_labelled_by_partition() -> None:
    views, _ = fold(gpu_cluster())
    got = samples(partitions_families(views))

    assert got["slurm_partitions"] == 1
    assert got['slurm_partition_jobs_pending{partition="gpu"}'] == 2
    assert got['slurm_partition_jobs{partition="gpu"}'] == 3  # the failed job is completed
    assert got['slurm_partition_jobs_max_job_nodes{partition="gpu"}'] == 4
    assert got['slurm_partition_jobs_max_job_nodes_nohold{partition="gpu"}'] == 4
    assert got['slurm_partition_jobs_min_job_nodes_nohold{partition="gpu"}'] == 3
    assert got['slurm_partition_gpus{partition="gpu"}'] == 16
    assert got['slurm_partition_nodes{partition="gpu"}'] == 4
    assert got['slurm_partition_nodes_mixed{partition="gpu"}'] == 2
    assert got['slurm_partition_nodes_drained{partition="gpu"}'] == 1


def test_user_and_account_families_carry_username_and_account_labels() -> None:
    views, _ = fold(gpu_cluster())
    got = samples(users_accounts_families(views))
    assert got['slurm_user_jobs_pending{username="bob"}'] == 2
    assert got['slurm_account_jobs_running{account="ml"}'] == 1


def test_queue_wait_and_restart_latency_come_from_the_facts_times() -> None:
    b = gpu_cluster()
    job = b.queued(partition="gpu", requeue="expedite")
    b.advance(2_000)
    run = b.started(job, ["g3"], partition="gpu")
    b.advance(10_000)
    b.kill(job, run, "NODE_FAIL", ["g3"])
    b.advance(500)
    b.ended(job, run, "NODE_FAIL")
    b.advance(1_500)
    b.started(job, ["g4"], partition="gpu", restart_count=1)
    _, metrics = fold(b)

    waits = samples([metrics.queue_wait.family()])
    assert waits['sluice_job_queue_wait_seconds_count{partition="gpu"}'] == 3
    assert waits['sluice_job_queue_wait_seconds_sum{partition="gpu"}'] == 30 + 1 + 2
    restarts = samples([metrics.restart_latency.family()])
    assert restarts['sluice_job_restart_latency_seconds_sum{partition="gpu",expedited="false"}'] \
        == 2.0
    sched = samples(metrics.scheduler_families())
    assert sched["slurm_schedule_cycle_cnt"] == 1
    assert sched["slurm_schedule_cycle_depth"] == 10
    assert sched["slurm_schedule_queue_len"] == 2
    assert sched["slurm_sdiag_jobs_failed"] == 2


def test_histogram_buckets_are_cumulative() -> None:
    h = Histogram("x_seconds", "x", (1, 5), ("p",))
    for value in (0.5, 2, 7):
        h.observe(value, "a")
    got = samples([h.family()])
    assert got['x_seconds_bucket{p="a",le="1"}'] == 1
    assert got['x_seconds_bucket{p="a",le="5"}'] == 2
    assert got['x_seconds_bucket{p="a",le="+Inf"}'] == 3
    assert got['x_seconds_count{p="a"}'] == 3


def test_label_values_are_escaped() -> None:
    text = render([Family("x", "a \\ help\nline").add(1, (("reason", 'say "hi"\\'),))])
    assert b'x{reason="say \\"hi\\"\\\\"} 1' in text
    assert b"# HELP x a \\\\ help\\nline" in text


def test_every_metric_name_is_a_valid_prometheus_name() -> None:
    views, metrics = fold(gpu_cluster())
    families = [*jobs_families(views), *nodes_families(views), *partitions_families(views),
                *users_accounts_families(views), *metrics.scheduler_families(),
                *metrics.families()]
    for family in families:
        assert re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", family.name)


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool is not installed (Debian package 'prometheus')")
def test_promtool_accepts_the_exposition() -> None:
    views, metrics = fold(gpu_cluster())
    body = render([*jobs_families(views), *nodes_families(views), *partitions_families(views),
                   *users_accounts_families(views), *metrics.scheduler_families(),
                   *metrics.families()])
    checked = subprocess.run(["promtool", "check", "metrics"], input=body,
                             capture_output=True, check=False, timeout=30)
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
