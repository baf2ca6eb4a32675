"""A soak: steady load on real processes for an hour, with memory, lag and cycle age each minute.

Usage::

    .venv/bin/python benchmarks/bench_soak.py [--minutes 60] [--nodes 8] [--rate 2]
        [--fail-every 240] [--out docs/soak] [--plot]

A LocalSystem (worker, projections, ``--nodes`` node daemons, the broker at ``KAFKA_BOOTSTRAP`` or
a local one) gets ``--rate`` submissions a second (1-CPU jobs sleeping 1-20 s, from a seeded
generator, some of them 2-node), and every ``--fail-every`` seconds one node daemon is SIGKILLed
and started again 20 s later (a node failure and its return). Each minute it samples the RSS of
the worker, the projections and the node daemons (from /proc), the views' lag in records and
their freshness (the shard's cycle age when the views report it), and the jobs queued/ended so
far (the active jobs and the views' sdiag counters: a sample never asks for every job ever,
which would measure that request; one ``/v1/jobs?all=1`` at the end gives every job's state),
and prints one line. The samples go to ``<out>.json``; ``--plot`` draws ``<out>.png``
(needs matplotlib, which is not a dependency of Sluice: ``pip install matplotlib``). Memory is
flat when the last third's RSS is within a few MiB of the middle third's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker import BenchBroker, machine_line

from cli.submit import real_user
from tests.e2e.harness import LocalSystem


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` in MiB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def sample(system: LocalSystem, started: float, submitted: int) -> dict[str, Any]:
    """One minute's figures."""
    procs = system.processes
    nodes = [p.pid for name, p in procs.items() if name.startswith("n")]
    row: dict[str, Any] = {
        "minute": round((time.monotonic() - started) / 60, 1),
        "load1": os.getloadavg()[0],
        "worker_mib": rss_mib(procs["worker"].pid) if "worker" in procs else 0.0,
        "views_mib": rss_mib(procs["projections"].pid) if "projections" in procs else 0.0,
        "node_mib_mean": sum(rss_mib(p) for p in nodes) / max(1, len(nodes)),
        "submitted": submitted,
    }
    try:
        # the active jobs only: a sample must not itself load every job ever into the views
        answer = system.client.get("/v1/jobs", timeout_s=30)
        jobs = answer["jobs"]
        fresh = answer.get("freshness", {})
        sdiag = sdiag_counts(system)
        row.update(views_gauges(system))
        row["ended"] = sdiag.get("completed", 0) + sdiag.get("failed", 0) + sdiag.get(
            "canceled", 0)
        row["pending"] = sum(1 for j in jobs if j["state"] == "PENDING")
        row["states"] = dict(Counter(j["state"] for j in jobs))
        row["lag_records"] = fresh.get("lag_records")
        row["cycle_age_s"] = fresh.get("cycle_age_s", fresh.get("shard_cycle_age_s"))
    except Exception as exc:  # a sample must not end the soak: record what went wrong
        row["error"] = str(exc)
    return row


def sdiag_counts(system: LocalSystem) -> dict[str, int]:
    """The views' ``slurm_sdiag_jobs_*`` counters (runs ended since the views started)."""
    url = f"http://{system.settings.api}/metrics/scheduler"
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("slurm_sdiag_jobs_"):
            name, _, value = line.partition(" ")
            out[name.removeprefix("slurm_sdiag_jobs_")] = int(float(value))
    return out


def views_gauges(system: LocalSystem) -> dict[str, float]:
    """The views' job rows in memory and their RocksDB's memory (MiB), from ``/metrics/sluice``."""
    url = f"http://{system.settings.api}/metrics/sluice"
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == "sluice_projection_jobs_in_memory":
            out["views_jobs_in_memory"] = float(value)
        elif name.startswith("sluice_projection_store_memory_bytes{"):
            kind = name.split('kind="')[1].split('"')[0]
            out[f"views_rocksdb_{kind}_mib"] = round(float(value) / 2**20, 2)
    return out


def final_states(system: LocalSystem) -> dict[str, int]:
    """Every job's state at the end (``/v1/jobs?all=1``, read from the views' store)."""
    jobs = system.client.get("/v1/jobs?all=1", timeout_s=60)["jobs"]
    return dict(Counter(j["state"] for j in jobs))  # a refused soak shows here


def drive(
    system: LocalSystem, args: argparse.Namespace, names: list[str], rng: random.Random
) -> list[dict[str, Any]]:
    """Submit at the rate, fail and revive nodes, sample each minute; return the samples."""
    samples: list[dict[str, Any]] = []
    started = time.monotonic()
    end = started + args.minutes * 60
    next_sample, next_failure = started, started + args.fail_every
    revive: tuple[float, str] | None = None
    submitted = 0
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_sample:
            row = sample(system, started, submitted)
            samples.append(row)
            print(json.dumps(row), flush=True)
            next_sample += 60
        if now >= next_failure:
            victim = rng.choice(names)
            if victim in system.processes:
                system.kill(victim, signal.SIGKILL)
                revive = (now + 20, victim)
            next_failure += args.fail_every
        if revive and now >= revive[0]:
            system.start_node(revive[1], 4, 8192)
            revive = None
        sluid = system.client.sluids.new()
        nodes = 2 if rng.random() < 0.1 else 1
        system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
            "user": args.user, "nodes_min": nodes, "cpus_per_task": 1, "time_limit_s": 600,
            "command": ["sleep", str(rng.randint(1, 20))], "name": "soak",
            "workdir": str(args.workdir)}})
        submitted += 1
        time.sleep(max(0.0, 1 / args.rate - (time.monotonic() - now)))
    samples.append(sample(system, started, submitted))
    try:
        samples[-1]["final_states"] = final_states(system)
    except Exception as exc:
        samples[-1]["error"] = str(exc)
    print(json.dumps(samples[-1]), flush=True)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--rate", type=float, default=2.0, help="submissions per second")
    parser.add_argument("--fail-every", type=float, default=240.0, help="seconds between failures")
    parser.add_argument("--out", type=Path, default=Path("docs/soak"))
    parser.add_argument("--plot", action="store_true")
    args = parser.parse_args()
    print(machine_line(), flush=True)
    broker = BenchBroker.start("sluice-soak-")
    prefix = os.environ.get("SLUICE_PREFIX", "soak")  # topics of this run: <prefix><pid>.*
    system = LocalSystem(broker.bootstrap, broker.home / "home", f"{prefix}{os.getpid()}")
    args.workdir = broker.home / "work"  # the jobs' output files
    args.user = real_user()  # node daemons run a job as its owner: one known on this machine
    args.workdir.mkdir()
    samples: list[dict[str, Any]] = []
    try:
        system.start_core()
        names = system.start_nodes(args.nodes, cpus=4, mem=8192)
        system.wait_nodes_idle(args.nodes, 180)
        samples = drive(system, args, names, random.Random(7))
    finally:
        system.stop()
        broker.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(samples, indent=1) + "\n")
    third = max(1, len(samples) // 3)
    for key in ("worker_mib", "views_mib", "node_mib_mean"):
        middle = sum(s[key] for s in samples[third:2 * third]) / max(1, third)
        last = sum(s[key] for s in samples[-third:]) / third
        print(f"{key}: middle third {middle:.1f} MiB, last third {last:.1f} MiB "
              f"({last - middle:+.1f}); slope over the second half {slope(samples, key):+.2f} "
              "MiB/min")
    if args.plot:
        plot(samples, args.out.with_suffix(".png"))
    return 0


def slope(samples: list[dict[str, Any]], key: str) -> float:
    """Least-squares slope (MiB per minute) of ``key`` over the second half of the samples."""
    half = [(s["minute"], s[key]) for s in samples[len(samples) // 2:]]
    if len(half) < 2:
        return 0.0
    mean_t = sum(t for t, _ in half) / len(half)
    mean_v = sum(v for _, v in half) / len(half)
    spread = sum((t - mean_t) ** 2 for t, _ in half)
    return sum((t - mean_t) * (v - mean_v) for t, v in half) / spread if spread else 0.0


def plot(samples: list[dict[str, Any]], path: Path) -> None:
    """RSS and lag against time (matplotlib, if installed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is not installed (pip install matplotlib)")
        return
    minutes = [s["minute"] for s in samples]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for key, label in (("worker_mib", "worker"), ("views_mib", "projections"),
                       ("node_mib_mean", "node daemon (mean)")):
        top.plot(minutes, [s[key] for s in samples], label=label)
    top.set_ylabel("RSS (MiB)")
    top.legend()
    bottom.plot(minutes, [s.get("lag_records") or 0 for s in samples], label="views lag (records)")
    bottom.plot(minutes, [max((s.get("cycle_age_s") or {}).values(), default=0)
                          for s in samples], label="cycle age (s, oldest shard)")
    bottom.set_xlabel("minutes")
    bottom.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}")


if __name__ == "__main__":
    sys.exit(main())
