"""The reliability invariants of a running (or stopped) Sluice system, read from its ledger and
views: what a fault round checks after each fault.

    KAFKA_BOOTSTRAP=… SLUICE_TOPIC_PREFIX=… SLUICE_API=… python benchmarks/check_invariants.py \
        [--submitted FILE] [--no-views]

Checks, and prints one line per violation (exit 1 if any):

- each shard's ``shard_seq`` gapless from 1, no duplicate;
- every SLUID in ``--submitted`` (one a line: SLUIDs a client was told were accepted) queued
  exactly once; no job queued twice;
- no job with two runs at once (a ``JobStarted`` before its previous run's ``JobEnded``);
- no node's CPUs, memory or GPUs allocated past what it registered (runs folded in shard order);
- views: every job ended, running, or pending with a reason; every node's state;
- views equal a replay of the whole ledger (`sluice replay`'s fold): every job row's state.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from cli.client import Client
from streams.ledger import LedgerRecord, read_ledger
from streams.settings import Settings
from streams.topics import Topics


def ledger(settings: Settings) -> list[LedgerRecord]:
    records = list(read_ledger(settings.bootstrap, Topics(settings).events))
    records.sort(key=lambda r: (r.record["shard"], r.record["shard_seq"]))
    return records


def check_sequence(records: list[LedgerRecord]) -> list[str]:
    by_shard: dict[str, list[int]] = defaultdict(list)
    for r in records:
        by_shard[r.record["shard"]].append(r.record["shard_seq"])
    return [f"shard {s}: shard_seq has a gap or duplicate" for s, seqs in by_shard.items()
            if seqs != list(range(1, len(seqs) + 1))]


def check_queued(records: list[LedgerRecord], submitted: set[str]) -> list[str]:
    queued = Counter(r.record["job_sluid"] for r in records if r.name == "JobQueued")
    out = [f"job {s} queued {n} times" for s, n in queued.items() if n > 1]
    out += [f"accepted job {s} lost (never queued)" for s in sorted(submitted - set(queued))]
    return out


def check_runs(records: list[LedgerRecord]) -> list[str]:
    """No job runs twice at once; no node allocated past its registered capacity."""
    out: list[str] = []
    capacity: dict[str, tuple[int, int, int]] = {}
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    runs: dict[str, dict[str, Any]] = {}
    open_run: dict[str, str] = {}
    for r in records:
        body = r.record
        if r.name == "NodeRegistered":
            capacity[body["name"]] = (body["cpus"], body["mem_mb"], body["gpus"])
        elif r.name == "JobStarted":
            job = body["job_sluid"]
            if job in open_run:
                out.append(f"job {body['job_id']} started run {body['run_sluid']} while run "
                           f"{open_run[job]} was open (shard_seq {body['shard_seq']})")
            open_run[job] = body["run_sluid"]
            runs[body["run_sluid"]] = body
            for i, node in enumerate(body["nodes"]):
                u = used[node]
                u[0] += body["alloc_cpus"][i] if body["alloc_cpus"] else 0
                u[1] += body["alloc_mem_mb"][i] if body["alloc_mem_mb"] else 0
                u[2] += body["alloc_gpus"][i] if body["alloc_gpus"] else 0
                cap = capacity.get(node)
                if cap and (u[0] > cap[0] or u[1] > cap[1] or u[2] > cap[2]):
                    out.append(f"node {node} over-allocated {u} > {cap} by run "
                               f"{body['run_sluid']} (shard_seq {body['shard_seq']})")
        elif r.name == "JobEnded":
            run = runs.pop(body["run_sluid"], None)
            if open_run.get(body["job_sluid"]) == body["run_sluid"]:
                del open_run[body["job_sluid"]]
            if run is None:
                continue
            for i, node in enumerate(run["nodes"]):
                u = used[node]
                u[0] -= run["alloc_cpus"][i] if run["alloc_cpus"] else 0
                u[1] -= run["alloc_mem_mb"][i] if run["alloc_mem_mb"] else 0
                u[2] -= run["alloc_gpus"][i] if run["alloc_gpus"] else 0
    return out


def check_views(client: Client) -> tuple[list[str], dict[str, int]]:
    out: list[str] = []
    jobs = client.get("/v1/jobs?all=1")["jobs"]
    states = Counter(j["state"] for j in jobs)
    for j in jobs:
        if j["state"] == "PENDING" and not j.get("reason"):
            out.append(f"job {j['job_id']} pending without a reason")
    for n in client.get("/v1/nodes")["nodes"]:
        if n["state"] not in ("IDLE", "MIXED", "ALLOCATED"):
            out.append(f"node {n['name']} {n['state']}: {n.get('reason', '')}")
    return out, dict(states)


def live_states(client: Client) -> dict[str, str]:
    return {j["job_sluid"]: j["state"] for j in client.get("/v1/jobs?all=1")["jobs"]}


def replayed_states(settings: Settings) -> dict[str, str]:
    from projections.replay import read_facts, views_at

    return {sluid: str(job["state"]) for sluid, job in views_at(read_facts(settings)).jobs.items()}


def check_replay(settings: Settings, client: Client, settle_s: float = 3.0) -> list[str]:
    """The views' job states equal a fold of the whole ledger (``sluice replay``'s). A job
    that differs is looked at again after ``settle_s`` (a fact may have come between the two
    reads); one that still differs is a violation (e.g. a fact the views dead-lettered)."""
    differ: set[str] = set()
    for attempt in range(2):
        live, replayed = live_states(client), replayed_states(settings)
        now = {s for s in live.keys() | replayed.keys() if live.get(s) != replayed.get(s)}
        differ = now if attempt == 0 else differ & now
        if not differ:
            return []
        time.sleep(settle_s)
    return [f"job {s}: views say {live.get(s, 'nothing')}, the ledger's replay "
            f"{replayed.get(s, 'nothing')}" for s in sorted(differ)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--submitted", type=Path)
    parser.add_argument("--no-views", action="store_true")
    args = parser.parse_args()
    settings = Settings.from_env()
    records = ledger(settings)
    submitted = set(args.submitted.read_text().split()) if args.submitted else set()
    problems = check_sequence(records) + check_queued(records, submitted) + check_runs(records)
    print(f"{len(records)} facts; {Counter(r.name for r in records).most_common(8)}")
    if not args.no_views:
        view_problems, states = check_views(Client(settings))
        problems += view_problems + check_replay(settings, Client(settings))
        print(f"views: {states}")
    for p in problems:
        print("VIOLATION", p)
    return 1 if problems else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
