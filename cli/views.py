"""``sluice queue`` (squeue), ``sluice nodes`` (sinfo), ``sluice show job`` (scontrol show job)
and ``sluice history`` (sacct), all read from the projections' HTTP API."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from typing import Any

from cli.client import ApiError, Client
from cli.timefmt import format_duration
from projections.job_states import short_state, shown_state
from streams.settings import Settings

__all__ = ["add_parsers"]

def add_parsers(sub: Any) -> None:
    """Register queue, nodes, show and history."""
    q = sub.add_parser("queue", help="pending and running jobs (like squeue)")
    q.add_argument("-u", "--user", default="")
    q.add_argument("-A", "--account", default="")
    q.add_argument("-p", "--partition", default="")
    q.add_argument("-t", "--states", default="", help="e.g. PENDING,RUNNING")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=_queue)
    n = sub.add_parser("nodes", help="nodes by partition and state (like sinfo)")
    n.add_argument("-N", "--node-oriented", action="store_true", help="one line per node")
    n.add_argument("--json", action="store_true")
    n.set_defaults(run=_nodes)
    s = sub.add_parser("show", help="one object in detail (like scontrol show)")
    s.add_argument("kind", choices=["job", "node"])
    s.add_argument("ref")
    s.add_argument("--json", action="store_true")
    s.set_defaults(run=_show)
    h = sub.add_parser("history", help="jobs and their runs (like sacct)")
    h.add_argument("-u", "--user", default="")
    h.add_argument("-j", "--jobs", default="", help="comma-separated ids or SLUIDs")
    h.add_argument("--json", action="store_true")
    h.set_defaults(run=_history)


def _get(settings: Settings, path: str) -> dict[str, Any] | None:
    try:
        return Client(settings).get(path)
    except ApiError as exc:
        print(f"sluice: {exc}", file=sys.stderr)
        return None


def _query(**filters: str) -> str:
    parts = [f"{k}={v}" for k, v in filters.items() if v]
    return "?" + "&".join(parts) if parts else ""


def _queue(args: argparse.Namespace, settings: Settings) -> int:
    answer = _get(settings, "/v1/jobs" + _query(user=args.user, account=args.account,
                                                partition=args.partition, state=args.states))
    if answer is None:
        return 1
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    now_ms = int(time.time() * 1000)
    print(f"{'JOBID':>8} {'PARTITION':<10} {'NAME':<12} {'USER':<10} {'ST':<3} {'TIME':>10} "
          f"{'NODES':>5} NODELIST(REASON)")
    for job in answer["jobs"]:
        state, flags = job["state"], job.get("flags", [])
        label = short_state(state, flags)
        on_nodes = state == "RUNNING" or "COMPLETING" in flags  # squeue lists a CG job's nodes
        elapsed = (now_ms - job["start_ms"]) // 1000 if state == "RUNNING" else 0
        where = ",".join(job["nodes"]) if on_nodes else f"({job['reason']})"
        count = len(job["nodes"]) if on_nodes else job.get("nodes_min", 1)
        print(f"{job['job_id']:>8} {job['partition'] or '-':<10} {job['name'][:12]:<12} "
              f"{job['user'][:10]:<10} {label:<3} {format_duration(elapsed):>10} {count:>5} "
              f"{where}")
    _print_freshness(answer)
    return 0


def _nodes(args: argparse.Namespace, settings: Settings) -> int:
    answer = _get(settings, "/v1/nodes")
    if answer is None:
        return 1
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    if args.node_oriented:
        print(f"{'NODELIST':<16} {'STATE':<10} {'CPUS':>5} {'MEMORY':>8} {'GPUS':>5} "
              f"{'PARTITION':<12} JOBS")
        for node in answer["nodes"]:
            print(f"{node['name']:<16} {node['state'].lower():<10} {node['cpus']:>5} "
                  f"{node['mem_mb']:>8} {node['gpus']:>5} "
                  f"{','.join(node.get('partitions', [])) or '-':<12} "
                  f"{','.join(str(j) for j in node.get('jobs', []))}")
    else:
        groups: dict[tuple[str, str], list[str]] = defaultdict(list)
        for node in answer["nodes"]:
            for partition in node.get("partitions") or ["-"]:
                groups[(partition, node["state"].lower())].append(node["name"])
        print(f"{'PARTITION':<12} {'STATE':<10} {'NODES':>5} NODELIST")
        from scheduler.topology.hostlist import compress

        for (partition, state), names in sorted(groups.items()):
            print(f"{partition:<12} {state:<10} {len(names):>5} {compress(names)}")
    _print_freshness(answer)
    return 0


def _show(args: argparse.Namespace, settings: Settings) -> int:
    answer = _get(settings, f"/v1/{args.kind}s/{args.ref}")
    if answer is None:
        return 1
    row = answer[args.kind]
    if args.json:
        print(json.dumps(row, indent=2))
        return 0
    if args.kind == "job":  # scontrol's JobState: the first state flag, else the base state
        print(f"job_state={shown_state(row['state'], row.get('flags', []))}")
    for key in sorted(row):
        value = row[key]
        if key == "runs":
            continue
        print(f"{key}={json.dumps(value) if isinstance(value, list | dict) else value}")
    for run in row.get("runs", []):
        print(f"run {run['run_sluid']}: {run['state']} exit={run['exit_code']} "
              f"restart={run['restart_count']} nodes={','.join(run['nodes'])}")
    return 0


def _history(args: argparse.Namespace, settings: Settings) -> int:
    answer = _get(settings, "/v1/jobs?all=1" + _query(user=args.user).replace("?", "&"))
    if answer is None:
        return 1
    wanted = {j for j in args.jobs.split(",") if j}
    jobs = [j for j in answer["jobs"]
            if not wanted or str(j["job_id"]) in wanted or j["job_sluid"] in wanted]
    if args.json:
        print(json.dumps({"jobs": jobs}, indent=2))
        return 0
    print(f"{'JOBID':>8} {'RUN SLUID':<15} {'STATE':<11} {'START':<20} {'ELAPSED':>10} "
          f"{'EXITCODE':>8} NODES")
    for job in jobs:
        if not job["runs"]:
            print(f"{job['job_id']:>8} {'-':<15} {job['state']:<11} {'-':<20} {'-':>10} "
                  f"{'-':>8} -")
        for run in job["runs"]:
            end = run["end_ms"] or int(time.time() * 1000)
            start = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(run["start_ms"] / 1000))
            print(f"{job['job_id']:>8} {run['run_sluid']:<15} {run['state']:<11} {start:<20} "
                  f"{format_duration((end - run['start_ms']) // 1000):>10} "
                  f"{run['exit_code']}:{run['signal']:<6} {','.join(run['nodes'])}")
    return 0


def _print_freshness(answer: dict[str, Any]) -> None:
    fresh = answer.get("freshness", {})
    if fresh.get("lag_records"):
        print(f"(views are {fresh['lag_records']} ledger records behind)", file=sys.stderr)
