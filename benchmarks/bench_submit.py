"""Submissions per second into the ledger, and submit → JobQueued / JobStarted latency.

Usage::

    .venv/bin/python benchmarks/bench_submit.py [--jobs 20000] [--samples 50] \
        [--busy-nodes 64] [--shards 2 --workers 2] [--tree DIR] [--prefix P]

Runs the real system (the faust worker with one shard, and for the start latency four node
daemons) against the broker at ``KAFKA_BOOTSTRAP``, or a local single-node KRaft broker it
starts and stops. Phase 1 produces ``--jobs`` SubmitJob requests as fast as one confluent-kafka
producer can, while a read-committed consumer of the ledger records when each JobQueued
becomes visible: throughput = jobs / (last JobQueued seen - first submission). Phase 2 submits
``--samples`` one-node jobs one at a time to an idle cluster and records when JobQueued and
JobStarted become visible (``--samples 0`` skips it). Latencies are wall-clock on this host,
from just before ``produce`` to the moment the consumer holds the fact.

``--busy-nodes N`` runs phase 1 on a busy cluster: N one-CPU node daemons, each running a long
job (``sleep``) started before the burst, so the daemons heartbeat (at their default
interval, a third of ``SLUICE_NODE_TIMEOUT``) and the burst's jobs all
stay pending behind them (every scheduling pass sees the whole queue). ``--shards S`` with
``--workers W`` spreads the burst over S shards (partitions ``p0``..``pS-1``, one shard each)
owned by W workers. ``--tree DIR`` runs the worker and the daemons from another checkout (an
A/B against a baseline: ``git archive REV | tar -x -C DIR``). Each figure is printed with the
CPU seconds the workers spent during the burst and the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_idle import TICKS, cpu_s, load
from broker import BenchBroker, machine_line
from confluent_kafka import OFFSET_END, TopicPartition

from schemas import SluidGenerator, decode
from streams.clients import consumer, producer
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER, job_workdir, submit_records


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
                subject = record.get("job_sluid") or record.get("config_sluid")
                if subject:
                    self.seen.setdefault((name, subject), now)

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


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """Each thread of ``pid``: its kernel name and its user + system CPU seconds."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            head, _, rest = (task / "stat").read_text().partition(" (")
            name, _, tail = rest.rpartition(") ")
            fields = tail.split()
        except OSError:
            continue
        out[int(head)] = (name, (int(fields[11]) + int(fields[12])) / TICKS)
    return out


def python_threads(pid: int) -> dict[int, str]:
    """Native thread id → its Python name and the function its thread runs (``py-spy dump``)."""
    spy = str(Path(sys.executable).with_name("py-spy"))
    try:
        text = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, check=False,
                              text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    names: dict[int, str] = {}
    current, previous = None, ""
    for line in text.splitlines():
        if line.startswith("Thread "):
            words = line.split()
            try:
                current = int(words[1], 0)
            except (IndexError, ValueError):
                current = None
                continue
            names[current] = line.partition('"')[2].rstrip('"')
        elif current is not None and line.strip().startswith("Thread.run "):
            names[current] += f" {previous.split(maxsplit=1)[0]}"  # what it was started with
        previous = line.strip()
    return names


def print_threads(pid: int, before: dict[int, tuple[str, float]], jobs: int) -> None:
    """The CPU a job of each thread of ``pid`` since ``before``."""
    after, names = thread_cpu(pid), python_threads(pid)
    rows = []
    for tid, (kernel, seconds) in after.items():
        used = seconds - before.get(tid, (kernel, 0.0))[1]
        if used > 0:
            rows.append((used, f"{kernel} {names.get(tid, '')}".strip()))
    for used, name in sorted(rows, reverse=True):
        print(f"  thread {name}: {used:.2f} s ({used / jobs * 1e6:.0f} µs a job)")


def throughput(system: LocalSystem, watch: LedgerWatch, jobs: int,
               partitions: list[str] | None = None, workers: list[str] | None = None,
               profile: Path | None = None, rate: int = 50, threads: bool = False) -> float:
    sluids = SluidGenerator(system.settings.cluster_id)
    spread = partitions or [""]
    records = [submit_records(sluids.new(), time_limit_s=60,
                              **({"partition": spread[i % len(spread)]} if partitions else {}))
               for i in range(jobs)]
    pids = [system.processes[name].pid for name in workers or ["worker"]]
    spy = None
    if profile is not None:  # py-spy's collapsed stacks of the (first) worker, all threads
        spy = subprocess.Popen([str(Path(sys.executable).with_name("py-spy")), "record",
                                "--pid", str(pids[0]), "--format", "raw", "--rate", str(rate),
                                "--output", str(profile)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        time.sleep(1.0)
    cpu_before, load_before = sum(cpu_s(pid) for pid in pids), load()
    tasks_before = thread_cpu(pids[0]) if threads else {}
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
    used = sum(cpu_s(pid) for pid in pids) - cpu_before
    if threads:
        print_threads(pids[0], tasks_before, jobs)
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(30)
    print(f"produced {jobs} submissions in {produced:.2f} s ({jobs / produced:,.0f}/s)")
    print(f"accepted into the ledger: {jobs} in {elapsed:.2f} s = {jobs / elapsed:,.0f}/s; "
          f"worker CPU {used:.1f} s ({used / jobs * 1e6:.0f} µs a job); "
          f"load {load_before} -> {load()}")
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


def warm_up(system: LocalSystem, watch: LedgerWatch, partitions: list[str] | None = None
            ) -> None:
    """One job through each shard, so start-up costs are not measured."""
    keys = []
    for partition in partitions or [""]:
        warm = SluidGenerator(system.settings.cluster_id).new()
        system.client.send(warm, "SubmitJob", {"job_sluid": warm, "spec": {
            "user": TEST_USER, "command": ["true"], "workdir": job_workdir(),
            **({"partition": partition} if partition else {})}})
        keys.append(("JobQueued", warm))
    watch.wait(keys, 180)


def occupy(system: LocalSystem, watch: LedgerWatch, nodes: int) -> None:
    """Start ``nodes`` one-CPU daemons and one long job on each; wait until all run."""
    for index in range(1, nodes + 1):  # the daemons' default heartbeat (SLUICE_NODE_TIMEOUT / 3)
        name = f"n{index:02d}"
        system.start(name, "node", "--name", name, "--cpus", "1", "--mem", "1024")
    sluids = SluidGenerator(system.settings.cluster_id)
    keys = []
    for _ in range(nodes):
        sluid = sluids.new()
        system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
            "user": TEST_USER, "command": ["sleep", "3600"], "workdir": job_workdir()}})
        keys.append(("JobStarted", sluid))
    watch.wait(keys, 600)
    print(f"{nodes} node daemons each running a job; load {load()}")


def sharded_config(shards: int) -> tuple[list[str], str, str]:
    """Partitions p0..pS-1, one per shard: their names, the shard map and the cluster file."""
    names = [f"p{i}" for i in range(shards)]
    shard_map = ",".join(f"partition:{name}={i}" for i, name in enumerate(names))
    text = (f"Nodes:\n  - NodeName: x[0-{shards - 1}]\n    CPUs: 1\n    RealMemory: 1024\n"
            "Partitions:\n") + "".join(
        f"  - PartitionName: {name}\n    Nodes: x{i}\n" + ("    Default: YES\n" if i == 0
                                                              else "")
        for i, name in enumerate(names))
    return names, shard_map, text


def burst(args: argparse.Namespace, bootstrap: str, home: Path,
          systems: list[LocalSystem]) -> None:
    """Phase 1: every submission stays queued (an empty cluster, or every node busy)."""
    partitions, shard_map, config = sharded_config(args.shards)
    busy = LocalSystem(bootstrap, home / "busy", f"{args.prefix}{int(time.time())}a",
                       partitions=max(3, args.shards), shards=args.shards,
                       shard_map=shard_map if args.shards > 1 else "")
    systems.append(busy)
    secret = str(busy.settings.home / "worker" / "inbox.key")
    workers = [f"worker-{i}" for i in range(args.workers)] if args.workers > 1 else [
        "worker"]
    for name in workers:
        env = ({"SLUICE_HOME": str(busy.settings.home / name),
                "SLUICE_WORKER_SECRET": secret} if args.workers > 1 else None)
        busy.start(name, "worker", "--loglevel", "warning", env=env)
    watch = LedgerWatch(busy)
    if args.shards > 1:
        config_sluid = busy.client.sluids.new()
        busy.client.send(config_sluid, "ApplyConfig", {
            "config_sluid": config_sluid, "kind": "cluster", "text": config,
            "source": "bench-cluster.yaml"})
        watch.wait([("ConfigApplied", config_sluid)], 180)
    warm_up(busy, watch, partitions if args.shards > 1 else None)
    if args.workers > 1:  # the group has settled: every worker owns a shard
        homes = {name: busy.settings.home / name for name in workers}
        busy.wait(lambda: all(busy.shard_owner({n: homes[n]}) for n in workers), 180,
                  "every worker to own a shard")
    if args.busy_nodes:
        occupy(busy, watch, args.busy_nodes)
    throughput(busy, watch, args.jobs, partitions if args.shards > 1 else None, workers,
               args.py_spy, args.py_spy_rate, args.threads)
    watch.close()
    busy.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--busy-nodes", type=int, default=0,
                        help="phase 1 with this many node daemons each running a long job")
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--tree", type=Path, default=None,
                        help="run the worker and daemons from this checkout (A/B baseline)")
    parser.add_argument("--prefix", default="bench")
    parser.add_argument("--py-spy", type=Path, default=None,
                        help="record the worker with py-spy during the burst (collapsed stacks)")
    parser.add_argument("--threads", action="store_true",
                        help="print the (first) worker's CPU a job by thread")
    parser.add_argument("--py-spy-rate", type=int, default=50, help="py-spy's samples a second")
    args = parser.parse_args()
    print(machine_line())
    print(f"tree {args.tree or Path(__file__).resolve().parents[1]}; load {load()}")
    if args.tree is not None:  # ``python -m cli.main`` finds the tree's modules first
        os.chdir(args.tree)
        os.environ["PYTHONPATH"] = str(args.tree.resolve())
    broker = BenchBroker.start("sluice-bench-")
    bootstrap, home = broker.bootstrap, broker.home
    systems: list[LocalSystem] = []
    try:
        burst(args, bootstrap, home, systems)
        if args.samples <= 0:
            return 0
        # Phase 2: a fresh, idle cluster of four node daemons.
        idle = LocalSystem(bootstrap, home / "idle", f"{args.prefix}{int(time.time())}b")
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
