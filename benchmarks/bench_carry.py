"""A pass after one submission at scale: whole, and carried on from the last pass.

    .venv/bin/python benchmarks/bench_carry.py [--nodes 10000] [--running 5000] [--pending 50000]

Builds a shard through ``decide``/``evolve`` with the default priority (no weights: first come,
first served) and EASY backfill: ``--nodes`` nodes of 64 CPUs, about ``--running`` whole-node
jobs running, ``--pending`` jobs of 1 to 64 nodes queued behind them. After one first pass, it
submits one job at a time and times the pass twice on the same state: ``schedule_with_plan``
(never carried: a whole pass) and ``schedule`` (carried on from the last pass when only new
jobs joined the queue; scheduler/scheduling/carry.py); it checks they give the same facts.
CPU seconds, with the load average (the machine is shared). It asserts nothing else.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler import (
    ClusterConfig,
    JobSpec,
    RegisterNode,
    SchedulerConfig,
    ShardState,
    SubmitJob,
    decide,
    evolve,
    initial_state,
    schedule,
)
from scheduler.records import Fact
from scheduler.schedule import schedule_with_plan
from schemas.sluid import compose, format_sluid

T0 = 1_700_000_000_000


class Shard:
    """A shard fed through decide/evolve, with client SLUIDs of cluster 3."""

    def __init__(self) -> None:
        config = ClusterConfig(scheduler=SchedulerConfig(policy="easy"))
        self.state: ShardState = initial_state("bench", 5, config)
        self.now, self.count = T0, 0

    def apply(self, facts: list[Fact]) -> None:
        for fact in facts:
            self.state = evolve(self.state, fact)

    def sluid(self, cluster: int) -> str:
        self.count += 1
        return format_sluid(compose(cluster, self.now + self.count // 1024, self.count % 1024))

    def submit(self, nodes: int, cpus: int, limit_s: int) -> None:
        spec = JobSpec(
            user=f"u{self.count % 50}",
            nodes_min=nodes,
            ntasks=nodes * cpus,
            time_limit_s=limit_s,
            command=("x",),
        )
        self.apply(decide(self.state, SubmitJob(job_sluid=self.sluid(3), spec=spec), self.now))


def build(nodes: int, running: int, pending: int) -> Shard:
    rng = random.Random(1)
    shard = Shard()
    for i in range(nodes):
        name = f"n{i:05d}"
        request = RegisterNode(node_sluid=shard.sluid(4), name=name, cpus=64, mem_mb=512_000)
        shard.apply(decide(shard.state, request, shard.now))
    for i in range(running):
        shard.submit(rng.choice((1, 2, 4)), 64, 86_400)
        if i % 500 == 499:
            shard.now += 1000
            shard.apply(schedule(shard.state, shard.now))
    shard.now += 1000
    shard.apply(schedule(shard.state, shard.now))
    for _ in range(pending):
        nodes, cpus = rng.choice((1, 2, 4, 8, 64)), rng.choice((8, 32, 64))
        shard.submit(nodes, cpus, rng.randint(600, 86_400))
    return shard


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--running", type=int, default=5_000)
    parser.add_argument("--pending", type=int, default=50_000)
    args = parser.parse_args()
    shard = build(args.nodes, args.running, args.pending)
    state = shard.state
    print(f"{len(state.nodes)} nodes, {len(state.running)} running, {len(state.pending)} pending")
    gc.collect()
    gc.freeze()
    shard.now += 1000
    cpu = time.process_time()
    facts = schedule(state, shard.now)
    print(f"  first pass: cpu {time.process_time() - cpu:.3f} s, {len(facts)} facts")
    shard.apply(facts)
    for _ in range(3):
        shard.now += 1000
        shard.submit(1, 64, 3600)
        load = os.getloadavg()[0]
        cpu = time.process_time()
        whole = schedule_with_plan(state, shard.now).facts
        whole_s = time.process_time() - cpu
        cpu = time.process_time()
        facts = schedule(state, shard.now)
        carried_s = time.process_time() - cpu
        same = "same facts" if facts == whole else "DIFFERENT FACTS"
        print(
            f"  after one submission: whole {whole_s * 1000:.1f} ms, carried "
            f"{carried_s * 1000:.2f} ms ({len(facts)} facts, {same}); load average {load:.2f}"
        )
        shard.apply(facts)


if __name__ == "__main__":
    main()
