"""Writes Sluice's Grafana dashboards (``dashboards/*.json``) from the compact spec below.

Run ``python -m infra.grafana.build_dashboards`` after changing a panel; a test checks that the
JSON files are what this script writes, and that every expression returns data from a real
Prometheus scraping a running system. Every query uses Slurm 25.11's metric names where Slurm
has one (so the panels also work against a slurmctld), and ``sluice_*`` for the rest.

Template variables: ``$partition`` (from ``slurm_partition_jobs``), ``$shard`` (from
``sluice_projection_shard_seq``); the datasource is the provisioned ``sluice-prometheus``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["DASHBOARDS", "build", "expressions", "main"]

HERE = Path(__file__).resolve().parent
DATASOURCE = {"type": "prometheus", "uid": "sluice-prometheus"}
RATE = "$__rate_interval"
P = 'partition=~"$partition"'

# (title, kind, [(expr, legend)], width, unit)
Panel = tuple[str, str, list[tuple[str, str]], int, str]

DASHBOARDS: dict[str, tuple[str, list[Panel]]] = {
    "sluice-overview": ("Sluice: cluster overview", [
        ("Pending jobs", "stat", [("slurm_jobs_pending", "pending")], 4, "short"),
        ("Running jobs", "stat", [("slurm_jobs_running", "running")], 4, "short"),
        ("Expediting jobs", "stat", [("slurm_jobs_expediting", "expediting")], 4, "short"),
        ("Nodes", "stat", [("slurm_nodes", "nodes")], 4, "short"),
        ("GPUs allocated", "stat", [
            ("sum(slurm_node_gpus_alloc) / clamp_min(sum(slurm_node_gpus), 1)", "GPUs")], 4,
         "percentunit"),
        ("Views lag", "stat", [("sum(sluice_projection_lag_records)", "records")], 4, "short"),
        ("Jobs by state", "timeseries", [
            ("slurm_jobs_pending", "pending"), ("slurm_jobs_running", "running"),
            ("slurm_jobs_hold", "held"), ("slurm_jobs_completing", "completing"),
            ("slurm_jobs_expediting", "expediting")], 12, "short"),
        ("Nodes by state", "timeseries", [
            ("slurm_nodes_idle", "idle"), ("slurm_nodes_mixed", "mixed"),
            ("slurm_nodes_alloc", "allocated"), ("slurm_nodes_down", "down"),
            ("slurm_nodes_drain + slurm_nodes_draining", "drain")], 12, "short"),
        ("Job starts and ends per second", "timeseries", [
            (f'sum(rate(sluice_ledger_facts_total{{fact="JobStarted"}}[{RATE}]))', "starts"),
            (f"sum by (state) (rate(sluice_job_ends_total[{RATE}]))", "ended {{state}}")],
         12, "ops"),
        ("Ledger facts per second", "timeseries", [
            (f"sum by (fact) (rate(sluice_ledger_facts_total[{RATE}]))", "{{fact}}")], 12,
         "ops"),
    ]),
    "sluice-queue": ("Sluice: queue depth and wait by partition", [
        ("Pending by partition", "timeseries", [
            (f"slurm_partition_jobs_pending{{{P}}}", "{{partition}}")], 12, "short"),
        ("Running by partition", "timeseries", [
            (f"slurm_partition_jobs_running{{{P}}}", "{{partition}}")], 12, "short"),
        ("Pending by reason", "timeseries", [
            (f"sum by (partition, reason) (sluice_partition_jobs_pending_reason{{{P}}})",
             "{{partition}} {{reason}}")], 12, "short"),
        ("Held jobs", "timeseries", [
            (f"slurm_partition_jobs_hold{{{P}}}", "{{partition}}")], 12, "short"),
        ("Queue wait (submit to start)", "timeseries", [
            ("histogram_quantile(0.5, sum by (partition, le) (rate("
             f"sluice_job_queue_wait_seconds_bucket{{{P}}}[{RATE}])))", "p50 {{partition}}"),
            ("histogram_quantile(0.95, sum by (partition, le) (rate("
             f"sluice_job_queue_wait_seconds_bucket{{{P}}}[{RATE}])))", "p95 {{partition}}")],
         12, "s"),
        ("Oldest pending job", "timeseries", [
            (f"sluice_partition_oldest_pending_age_seconds{{{P}}}", "{{partition}}")], 12, "s"),
        ("Largest pending request (nodes)", "timeseries", [
            (f"slurm_partition_jobs_max_job_nodes_nohold{{{P}}}", "{{partition}}")], 12,
         "short"),
        ("Mean queue wait", "timeseries", [
            (f"sum by (partition) (rate(sluice_job_queue_wait_seconds_sum{{{P}}}[{RATE}])) / "
             f"clamp_min(sum by (partition) (rate(sluice_job_queue_wait_seconds_count{{{P}}}"
             f"[{RATE}])), 1e-9)", "{{partition}}")], 12, "s"),
    ]),
    "sluice-nodes": ("Sluice: nodes by state and by block", [
        ("Nodes by state", "timeseries", [
            ("slurm_nodes_idle", "idle"), ("slurm_nodes_mixed", "mixed"),
            ("slurm_nodes_alloc", "allocated"), ("slurm_nodes_down", "down"),
            ("slurm_nodes_drained", "drained"), ("slurm_nodes_draining", "draining"),
            ("slurm_nodes_completing", "completing")], 12, "short"),
        ("Nodes by block and state", "timeseries", [
            ("sum by (block, state) (sluice_block_nodes)", "{{block}} {{state}}")], 12, "short"),
        ("Idle nodes by partition", "timeseries", [
            (f"slurm_partition_nodes_idle{{{P}}}", "{{partition}}")], 12, "short"),
        ("CPUs allocated by partition", "timeseries", [
            (f"slurm_partition_nodes_cpus_alloc{{{P}}} / clamp_min("
             f"slurm_partition_nodes_cpus_efctv{{{P}}}, 1)", "{{partition}}")], 12,
         "percentunit"),
        ("CPUs allocated per node", "timeseries", [
            ("slurm_node_cpus_alloc / clamp_min(slurm_node_cpus, 1)", "{{node}}")], 24,
         "percentunit"),
    ]),
    "sluice-gpus": ("Sluice: GPU allocation", [
        ("GPUs allocated", "timeseries", [
            ("sum(slurm_node_gpus_alloc)", "allocated"), ("sum(slurm_node_gpus)", "total")],
         12, "short"),
        ("GPUs allocated by partition", "timeseries", [
            (f"slurm_partition_jobs_gpus_alloc{{{P}}}", "{{partition}}")], 12, "short"),
        ("GPU allocation by block", "timeseries", [
            ("sluice_block_gpus_alloc / clamp_min(sluice_block_gpus, 1)", "{{block}}")], 12,
         "percentunit"),
        ("GPUs allocated per node", "timeseries", [
            ("slurm_node_gpus_alloc", "{{node}}")], 12, "short"),
    ]),
    "sluice-scheduler": ("Sluice: scheduler health", [
        ("Views lag per ledger partition", "timeseries", [
            ("sluice_projection_lag_records", "partition {{ledger_partition}}")], 12, "short"),
        ("Fact to view delay (p99)", "timeseries", [
            ("histogram_quantile(0.99, sum by (le) (rate("
             f"sluice_projection_apply_delay_seconds_bucket[{RATE}])))", "p99")], 12, "s"),
        ("Scheduling cycle time", "timeseries", [
            ("histogram_quantile(0.5, sum by (shard, le) (rate("
             f"sluice_scheduling_cycle_seconds_bucket[{RATE}])))", "p50 {{shard}}"),
            ("histogram_quantile(0.99, sum by (shard, le) (rate("
             f"sluice_scheduling_cycle_seconds_bucket[{RATE}])))", "p99 {{shard}}")], 12, "s"),
        ("Cycle phases (mean)", "timeseries", [
            (f"sum by (phase) (rate(sluice_scheduling_phase_seconds_sum[{RATE}])) / clamp_min("
             f"sum by (phase) (rate(sluice_scheduling_phase_seconds_count[{RATE}])), 1e-9)",
             "{{phase}}")], 12, "s"),
        ("Cycles per second", "timeseries", [
            (f'sum by (shard) (rate(sluice_scheduling_cycles_total{{shard=~"$shard"}}[{RATE}]))',
             "{{shard}}")],
         12, "ops"),
        ("Last cycle (sdiag, µs)", "timeseries", [
            ("slurm_schedule_cycle_last", "last"), ("slurm_sched_mean_cycle", "mean")], 12,
         "µs"),
        ("Requeues per second", "timeseries", [
            (f"sum by (expedited) (rate(sluice_job_requeues_total[{RATE}]))",
             "expedited={{expedited}}")], 12, "ops"),
        ("Failure to restart", "timeseries", [
            ("histogram_quantile(0.5, sum by (expedited, le) (rate("
             f"sluice_job_restart_latency_seconds_bucket[{RATE}])))",
             "p50 expedited={{expedited}}")], 12, "s"),
        ("Expediting jobs", "timeseries", [("slurm_jobs_expediting", "expediting")], 12,
         "short"),
        ("Pending at the last cycle", "timeseries", [
            ('sluice_shard_jobs_pending{shard=~"$shard"}', "{{shard}}")], 12, "short"),
    ]),
}


def _panel(index: int, y: int, x: int, panel: Panel) -> dict[str, Any]:
    title, kind, targets, width, unit = panel
    height = 4 if kind == "stat" else 8
    return {
        "id": index + 1, "type": kind, "title": title, "datasource": DATASOURCE,
        "gridPos": {"h": height, "w": width, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}}
        if kind == "timeseries" else {"reduceOptions": {"calcs": ["lastNotNull"]}},
        "targets": [{"datasource": DATASOURCE, "expr": expr, "legendFormat": legend,
                     "refId": chr(ord("A") + i)} for i, (expr, legend) in enumerate(targets)],
    }


def _variable(name: str, query: str) -> dict[str, Any]:
    return {"name": name, "type": "query", "datasource": DATASOURCE, "refresh": 2,
            "query": {"query": query, "refId": name}, "definition": query, "includeAll": True,
            "multi": True, "allValue": ".*", "current": {"text": "All", "value": "$__all"}}


def build(uid: str) -> dict[str, Any]:
    """The dashboard JSON of ``uid``."""
    title, panels = DASHBOARDS[uid]
    placed, x, y, row_height = [], 0, 0, 0
    for index, panel in enumerate(panels):
        width, height = panel[3], 4 if panel[1] == "stat" else 8
        if x + width > 24:
            x, y, row_height = 0, y + row_height, 0
        placed.append(_panel(index, y, x, panel))
        x, row_height = x + width, max(row_height, height)
    return {
        "uid": uid, "title": title, "tags": ["sluice", "slurm"], "timezone": "browser",
        "schemaVersion": 39, "version": 1, "editable": True, "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"}, "panels": placed,
        "templating": {"list": [
            _variable("partition", "label_values(slurm_partition_jobs, partition)"),
            _variable("shard", "label_values(sluice_projection_shard_seq, shard)"),
        ]},
        "annotations": {"list": []},
    }


def expressions(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard's panels."""
    return [t["expr"] for p in dashboard["panels"] for t in p["targets"]]


def main() -> None:
    """Write every dashboard under ``dashboards/``."""
    out = HERE / "dashboards"
    out.mkdir(exist_ok=True)
    for uid in DASHBOARDS:
        (out / f"{uid}.json").write_text(json.dumps(build(uid), indent=2) + "\n")


if __name__ == "__main__":
    main()
