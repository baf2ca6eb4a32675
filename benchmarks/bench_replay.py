"""Replay speed: ledger facts per second read back and folded, from a local broker.

Usage::

    .venv/bin/python benchmarks/bench_replay.py [--jobs 50000] [--nodes 1000] [--runs 3]

Writes a synthetic ledger of realistic facts (every job queued, pending, started on one to
eight of ``--nodes`` GPU nodes, ended; a CycleCompleted per batch of ~100 facts; written in
transactions of 1,000 facts, keyed by subject, as the shard writes them) to the broker at
``KAFKA_BOOTSTRAP`` (or a local single-node KRaft broker it starts and stops), then measures,
best of ``--runs``:

- child reader: ``sluice replay``'s way when a core is spare
  (``projections.replay_stream.replay_views``): the ledger read and decoded in a child process
  while this one merges and folds it; CPU seconds of both processes, and of this one (the
  fold's, the longer of the two);
- read: every partition read back (read-committed) and decoded in this process
  (``projections.replay.read_facts``, what ``sluice audit`` and ``verify`` read);
- fold: merged by ``(shard, shard_seq)`` and folded into the views (``views_at``); read, then
  fold is ``sluice replay``'s way on a busy machine;
- core: the same facts folded with the core's ``evolve`` (what a shard's recovery does).

Each figure is the best run's, in facts per wall second and per CPU second (librdkafka's
threads included); the load average is printed before and after the runs, and a digest of the
views' rows (jobs, nodes, shard sequences) of ``sluice replay``'s and of the read + fold, the
same for two trees that fold the same rows. ``--ledger PREFIX`` reads a ledger an earlier run
wrote (its topic prefix, printed) instead of writing one: A/B runs of two trees then read the
same ledger.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# The ledger builder imports the core, which imports numpy: one BLAS thread, not a pool, so
# that this process runs one thread and sluice replay's reader can be forked as in the CLI.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from broker import BenchBroker, machine_line

import scheduler
from cli.services import prepare_topics
from projections.replay import merge, paused_gc, read_facts, views_at
from projections.replay_stream import can_fork, replay_views, spare_core
from schemas import encode
from streams.clients import transactional_producer
from streams.settings import Settings
from streams.topics import Topics
from tests.unit.projections.kafka_ledger import subject
from tests.unit.projections.ledger_builder import LedgerBuilder


def build_ledger(jobs: int, nodes: int) -> LedgerBuilder:
    """Nodes, then jobs in waves: queued, pending, started, ended, with cycles closing batches."""
    b = LedgerBuilder(shard="bench", start_ms=1_767_225_600_000)
    for i in range(nodes):
        b.node(f"gpu{i:05d}", cpus=96, mem_mb=2_000_000, gpus=8, partitions=("gpu",),
               features=(f"block=b{i // 18}",))
    cursor, offset, since_cycle = 0, 0, 0
    running: list[tuple[str, str]] = []
    for j in range(jobs):
        width = 1 + j % 8
        job = b.queued(name=f"train-{j}", user=f"user{j % 50}", account=f"acct{j % 7}",
                       partition="gpu", nodes_min=width, ntasks=8 * width, cpus_per_task=12,
                       gpus_per_node=8, mem_per_node_mb=512_000, time_limit_s=86_400,
                       command=["torchrun", f"--nnodes={width}", "train.py"],
                       env={"NCCL_DEBUG": "WARN"}, requeue="expedite")
        b.pending(job, "Resources" if j % 3 else "Priority", priority=10_000 - j % 1000)
        b.advance(7)
        chosen = [f"gpu{(cursor + k) % nodes:05d}" for k in range(width)]
        cursor += width
        running.append((job, b.started(job, chosen, partition="gpu", user=f"user{j % 50}")))
        if len(running) > 64:
            done, run = running.pop(0)
            b.ended(done, run, "COMPLETED" if j % 11 else "FAILED", exit_code=0 if j % 11 else 1)
        since_cycle += 4
        if since_cycle >= 100:
            b.cycle(offset, offset + 24, pending=len(running), running=len(running), started=25)
            offset, since_cycle = offset + 25, 0
    b.cycle(offset, offset, pending=0, running=len(running), started=0)
    return b


def write(settings: Settings, builder: LedgerBuilder) -> None:
    topic = Topics(settings).events
    out = transactional_producer(settings.bootstrap, f"{settings.prefix}.bench",
                                 **{"linger.ms": 20, "batch.size": 1_000_000})
    out.init_transactions(30)
    facts = builder.facts
    for start in range(0, len(facts), 1000):
        out.begin_transaction()
        for name, record in facts[start:start + 1000]:
            out.produce(topic, encode(name, record), subject(record).encode())
            out.poll(0)
        out.commit_transaction(60)


def measure(settings: Settings) -> dict[str, Any]:
    """Wall and CPU seconds (the process's, librdkafka's threads included) of each phase."""
    clock = _Clock()
    _facts, replayed = replay_views(settings, child=True)
    replay_s, replay_cpu = clock.lap()
    replay_here = clock.here
    facts = read_facts(settings)
    read_s, read_cpu = clock.lap()
    views = views_at(facts)
    fold_s, fold_cpu = clock.lap()
    state = scheduler.initial_state("bench", settings.cluster_id)
    with paused_gc():
        for fact in merge(facts):
            state = scheduler.evolve(state, scheduler.from_record(fact.name, fact.record))
    core_s, core_cpu = clock.lap()
    return {"facts": len(facts), "read_s": read_s, "fold_s": fold_s, "core_s": core_s,
            "read_cpu": read_cpu, "fold_cpu": fold_cpu, "core_cpu": core_cpu,
            "replay_s": replay_s, "replay_cpu": replay_cpu, "replay_here": replay_here,
            "rows": _digest(views.jobs, views.nodes, views.shard_seq),
            "replayed": _digest(replayed.jobs, replayed.nodes, replayed.shard_seq)}


def _digest(*rows: object) -> str:
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:12]


class _Clock:
    """Wall and CPU time since the last lap: this process's and its ended children's; ``here``
    is this process's alone in the last lap."""

    def __init__(self) -> None:
        self.wall, self.cpu, self.own = time.perf_counter(), _cpu(), time.process_time()
        self.here = 0.0

    def lap(self) -> tuple[float, float]:
        wall, cpu, own = time.perf_counter(), _cpu(), time.process_time()
        lap = (wall - self.wall, cpu - self.cpu)
        self.here = own - self.own
        self.wall, self.cpu, self.own = wall, cpu, own
        return lap


def _cpu() -> float:
    """CPU seconds of this process and of its children that ended."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ledger", default="", metavar="PREFIX",
                        help="read the ledger written under this topic prefix (write none)")
    args = parser.parse_args()
    print(machine_line())
    broker = BenchBroker.start("sluice-bench-replay-")
    bootstrap, home = broker.bootstrap, broker.home
    try:
        settings = Settings(bootstrap=bootstrap,
                            prefix=args.ledger or f"benchreplay{int(time.time())}",
                            cluster="bench", partitions=6, home=home)
        if not args.ledger:
            prepare_topics(settings)
            builder = build_ledger(args.jobs, args.nodes)
            started = time.perf_counter()
            write(settings, builder)
            print(f"ledger {settings.prefix}: {len(builder.facts):,} facts ({args.jobs:,} jobs, "
                  f"{args.nodes:,} nodes) written in {time.perf_counter() - started:.1f}s, "
                  "6 partitions")
        print(f"before the runs: {_load()}; sluice replay would read in a child process: "
              f"{'yes' if can_fork() and spare_core() else 'no'} (forkable: {can_fork()}, "
              f"a spare core: {spare_core()})")
        results = [measure(settings) for _ in range(args.runs)]
        print(f"after the runs:  {_load()}")
        facts = results[0]["facts"]
        print(f"ledger {settings.prefix}: {facts:,} facts; rows "
              f"{', '.join(sorted({r['rows'] for r in results}))} (read + fold), "
              f"{', '.join(sorted({r['replayed'] for r in results}))} (child reader)")
        best = {k: min(r[k] for r in results)
                for k in ("read_s", "fold_s", "core_s", "read_cpu", "fold_cpu", "core_cpu",
                          "replay_s", "replay_cpu", "replay_here")}
        print(f"child reader:       {facts / best['replay_s']:>10,.0f} facts/s "
              f"({best['replay_s']:.2f}s end to end; {facts / best['replay_cpu']:,.0f}/CPU s of "
              f"both processes, {facts / best['replay_here']:,.0f}/CPU s of the folding one)")
        for label, key in (("read + decode:     ", "read"), ("merge + fold views:", "fold")):
            print(f"{label} {facts / best[key + '_s']:>10,.0f} facts/s ({best[key + '_s']:.2f}s; "
                  f"{facts / best[key + '_cpu']:,.0f}/CPU s)")
        replay, replay_cpu = best["read_s"] + best["fold_s"], best["read_cpu"] + best["fold_cpu"]
        print(f"read, then fold:    {facts / replay:>10,.0f} facts/s ({replay:.2f}s end to end; "
              f"{facts / replay_cpu:,.0f}/CPU s; one process)")
        print(f"core evolve:        {facts / best['core_s']:>10,.0f} facts/s "
              f"({best['core_s']:.2f}s; {facts / best['core_cpu']:,.0f}/CPU s)")
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
