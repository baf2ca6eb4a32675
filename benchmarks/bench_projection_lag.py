"""Projection lag under a sustained submission load: how far the views trail the ledger.

Usage::

    .venv/bin/python benchmarks/bench_projection_lag.py [--rate 200] [--seconds 30]

Runs the real system (the faust worker with one shard, and ``sluice projections`` with its
metrics, notifications and views) against the broker at ``KAFKA_BOOTSTRAP`` (or a local
single-node KRaft broker it starts and stops). One producer submits ``--rate`` jobs per second
for ``--seconds`` (no node daemons, so every job is queued and stays pending: intake, decide and
the projection only). Reported:

- fact → view: the projections' own histogram ``sluice_projection_apply_delay_seconds`` (from
  the moment a fact was written to the ledger to its application in the views), p50/p99;
- staleness: sampled every 100 ms while the load runs (after a 2 s ramp), wall clock minus the
  decision time of the newest fact the views hold, p50/p99/max (includes the worker's delay);
- records behind: the views' lag in ledger records (``/v1/status``), p50/max;
- submit → visible: for every 20th job, from just before ``produce`` to the first
  ``GET /v1/jobs/<SLUID>`` that finds it, p50/p99.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker import BenchBroker, machine_line

from schemas import SluidGenerator
from streams.clients import producer
from streams.topics import Topics
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import submit_records


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def histogram_quantile(text: str, name: str, q: float) -> float:
    """A quantile from a Prometheus histogram exposition (linear within buckets)."""
    buckets = []
    for line in text.splitlines():
        if line.startswith(f"{name}_bucket{{"):
            le = line.split('le="')[1].split('"')[0]
            buckets.append((float("inf") if le == "+Inf" else float(le), float(line.split()[-1])))
    if not buckets or buckets[-1][1] == 0:
        return float("nan")
    rank, previous_bound, previous_count = q * buckets[-1][1], 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return previous_bound
            share = (rank - previous_count) / max(count - previous_count, 1e-9)
            return previous_bound + (bound - previous_bound) * share
        previous_bound, previous_count = bound, count
    return previous_bound


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return bytes(answer.read())


class Visibility(threading.Thread):
    """Polls the views for sampled jobs and records submit → visible."""

    def __init__(self, api: str) -> None:
        super().__init__(daemon=True)
        self.api = api
        self.waiting: list[tuple[str, float]] = []
        self.latencies: list[float] = []
        self.lock, self.done = threading.Lock(), threading.Event()

    def add(self, sluid: str, sent: float) -> None:
        with self.lock:
            self.waiting.append((sluid, sent))

    def run(self) -> None:
        while not (self.done.is_set() and not self.waiting):
            with self.lock:
                head = self.waiting[0] if self.waiting else None
            if head is None:
                time.sleep(0.005)
                continue
            try:
                get(f"http://{self.api}/v1/jobs/{head[0]}")
            except urllib.error.HTTPError:
                time.sleep(0.002)
                continue
            except OSError:
                time.sleep(0.05)
                continue
            with self.lock:
                self.waiting.pop(0)
                self.latencies.append(time.perf_counter() - head[1])


def main() -> int:  # noqa: PLR0915 - one linear benchmark script
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=200, help="submissions per second")
    parser.add_argument("--seconds", type=int, default=30)
    args = parser.parse_args()
    print(machine_line())
    broker = BenchBroker.start("sluice-bench-lag-")
    bootstrap, home = broker.bootstrap, broker.home
    system = LocalSystem(bootstrap, home / "system", f"benchlag{int(time.time())}")
    try:
        system.start_core()
        system.wait(lambda: system.client.get("/v1/status"), 60, "the views' API")
        out, ids = producer(bootstrap), SluidGenerator(system.settings.cluster_id)
        topic = Topics(system.settings).requests
        warm = ids.new()
        out.produce(topic, submit_records(warm)[1], warm.encode())
        out.flush(10)
        system.wait(lambda: system.client.get(f"/v1/jobs/{warm}"), 120, "warm-up job")
        visible = Visibility(system.settings.api)
        visible.start()
        samples: list[tuple[float, float, int]] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                status = json.loads(get(f"http://{system.settings.api}/v1/status"))["freshness"]
                samples.append((time.perf_counter(), time.time() - status["last_fact_ms"] / 1000,
                                status["lag_records"]))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        total = args.rate * args.seconds
        started = time.perf_counter()
        for i in range(total):
            due = started + i / args.rate
            while time.perf_counter() < due:
                time.sleep(max(0.0, min(due - time.perf_counter(), 0.002)))
            sluid = ids.new()
            key, value = submit_records(sluid)[0], submit_records(sluid)[1]
            if i % 20 == 0:
                visible.add(sluid, time.perf_counter())
            out.produce(topic, value, key)
            out.poll(0)
        out.flush(30)
        ended = time.perf_counter()
        sent_s = ended - started
        visible.done.set()
        visible.join(120)
        stop.set()
        sampler.join(5)
        metrics = get(f"http://{system.settings.api}/metrics/sluice").decode()
        during = [(s, b) for t, s, b in samples if started + 2 <= t <= ended]
        staleness = [s for s, _ in during]
        behind = [float(b) for _, b in during]
        name = "sluice_projection_apply_delay_seconds"
        print(f"load: {total:,} submissions at {total / sent_s:,.0f}/s for {sent_s:.1f}s")
        print(f"fact -> view:      p50 {histogram_quantile(metrics, name, 0.5) * 1000:7.1f} ms   "
              f"p99 {histogram_quantile(metrics, name, 0.99) * 1000:7.1f} ms")
        print(f"staleness:         p50 {percentile(staleness, 0.5) * 1000:7.1f} ms   "
              f"p99 {percentile(staleness, 0.99) * 1000:7.1f} ms   "
              f"max {max(staleness) * 1000:7.1f} ms")
        print(f"records behind:    p50 {percentile(behind, 0.5):7.0f}      "
              f"max {max(behind):7.0f}")
        print(f"submit -> visible: p50 {statistics.median(visible.latencies) * 1000:7.1f} ms   "
              f"p99 {percentile(visible.latencies, 0.99) * 1000:7.1f} ms   "
              f"({len(visible.latencies)} samples)")
    finally:
        system.stop()
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
