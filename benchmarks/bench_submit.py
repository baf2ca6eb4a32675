"""Submissions per second into the ledger, and submit → JobQueued / JobStarted latency.

Usage::

    .venv/bin/python benchmarks/bench_submit.py [--jobs 20000] [--samples 50]

Runs the real system (the faust worker with one shard, and for the start latency four node
daemons) against the broker at ``KAFKA_BOOTSTRAP``, or a local single-node KRaft broker it
starts and stops. Phase 1 produces ``--jobs`` SubmitJob requests as fast as one confluent-kafka
producer can, while a read-committed consumer of the ledger records when each JobQueued
becomes visible: throughput = jobs / (last JobQueued seen - first submission). Phase 2 submits
``--samples`` one-node jobs one at a time to an idle cluster and records when JobQueued and
JobStarted become visible. Latencies are wall-clock on this host, from just before ``produce``
to the moment the consumer holds the fact.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker import BenchBroker, machine_line
from confluent_kafka import OFFSET_END, TopicPartition

from schemas import SluidGenerator, decode
from streams.clients import consumer, producer
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import submit_records


class LedgerWatch:
    """Records when each (fact name, job SLUID) first becomes visible."""

    def __init__(self, system: LocalSystem) -> None:
        self.seen: dict[tuple[str, str], float] = {}
        self._stop = threading.Event()
        topic = system.client.topics.events
        self._reader = consumer(system.settings.bootstrap)
        parts = self._reader.list_topics(topic, timeout=10).topics[topic].partitions
        self._reader.assign([TopicPartition(topic, p, OFFSET_END) for p in parts])
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for message in self._reader.consume(num_messages=5000, timeout=0.05):
                value = message.value()
                if message.error() is not None or value is None:
                    continue
                now = time.perf_counter()
                name, record = decode(value)
                if "job_sluid" in record:
                    self.seen.setdefault((name, record["job_sluid"]), now)

    def wait(self, keys: list[tuple[str, str]], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not all(k in self.seen for k in keys):
            if time.monotonic() > deadline:
                missing = sum(1 for k in keys if k not in self.seen)
                raise TimeoutError(f"{missing} facts not seen")
            time.sleep(0.01)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._reader.close()


def throughput(system: LocalSystem, watch: LedgerWatch, jobs: int) -> float:
    sluids = SluidGenerator(system.settings.cluster_id)
    records = [submit_records(sluids.new(), time_limit_s=60) for _ in range(jobs)]
    out = producer(system.settings.bootstrap, **{"linger.ms": 5})
    topic = system.client.topics.requests
    started = time.perf_counter()
    for key, value in records:
        while True:
            try:
                out.produce(topic, value, key)
                break
            except BufferError:
                out.poll(0.01)
        out.poll(0)
    out.flush(60)
    produced = time.perf_counter() - started
    watch.wait([("JobQueued", k.decode()) for k, _ in records], 600)
    last = max(watch.seen[("JobQueued", k.decode())] for k, _ in records)
    elapsed = last - started
    print(f"produced {jobs} submissions in {produced:.2f} s ({jobs / produced:,.0f}/s)")
    print(f"accepted into the ledger: {jobs} in {elapsed:.2f} s = {jobs / elapsed:,.0f}/s")
    return jobs / elapsed


def latency(system: LocalSystem, watch: LedgerWatch, samples: int) -> None:
    sluids = SluidGenerator(system.settings.cluster_id)
    out = producer(system.settings.bootstrap, **{"linger.ms": 0})
    topic = system.client.topics.requests
    queued, started_lat = [], []
    for _ in range(samples):
        key, value = submit_records(sluids.new(), command=["sleep", "0.2"], time_limit_s=60)
        sluid = key.decode()
        sent = time.perf_counter()
        out.produce(topic, value, key)
        out.flush(10)
        watch.wait([("JobQueued", sluid), ("JobStarted", sluid), ("JobEnded", sluid)], 60)
        queued.append(watch.seen[("JobQueued", sluid)] - sent)
        started_lat.append(watch.seen[("JobStarted", sluid)] - sent)
    for label, values in (("submit → JobQueued", queued), ("submit → JobStarted", started_lat)):
        ordered = sorted(values)
        p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
        print(f"{label}: p50 {statistics.median(values) * 1000:.1f} ms, "
              f"p99 {p99 * 1000:.1f} ms over {len(values)} jobs")


def warm_up(system: LocalSystem, watch: LedgerWatch) -> None:
    """One job through the system, so start-up costs are not measured."""
    warm = SluidGenerator(system.settings.cluster_id).new()
    system.client.send(warm, "SubmitJob", {"job_sluid": warm, "spec": {
        "user": "bench", "command": ["true"]}})
    watch.wait([("JobQueued", warm)], 120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--samples", type=int, default=50)
    args = parser.parse_args()
    print(machine_line())
    broker = BenchBroker.start("sluice-bench-")
    bootstrap, home = broker.bootstrap, broker.home
    systems: list[LocalSystem] = []
    try:
        # Phase 1: an empty cluster, so every submission stays queued (pure intake + decide).
        busy = LocalSystem(bootstrap, home / "busy", f"bench{int(time.time())}a")
        systems.append(busy)
        busy.start("worker", "worker", "--loglevel", "warning")
        watch = LedgerWatch(busy)
        warm_up(busy, watch)
        throughput(busy, watch, args.jobs)
        watch.close()
        busy.stop()
        # Phase 2: a fresh, idle cluster of four node daemons.
        idle = LocalSystem(bootstrap, home / "idle", f"bench{int(time.time())}b")
        systems.append(idle)
        idle.start("worker", "worker", "--loglevel", "warning")
        idle.start_nodes(4)
        watch = LedgerWatch(idle)
        warm_up(idle, watch)
        latency(idle, watch, args.samples)
        watch.close()
    finally:
        for system in systems:
            system.stop()
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
