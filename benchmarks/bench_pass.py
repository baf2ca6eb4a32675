"""One full scheduling pass at scale: 10,000 nodes, 50,000 pending and 5,000 running jobs.

    .venv/bin/python benchmarks/bench_pass.py [--nodes 10000] [--pending 50000] [--running 5000]
                                              [--blocks 18]

Builds a shard through the real ``decide``/``evolve`` (two partitions: 5,000 CPU nodes with
64 CPUs and 512 GB, 5,000 GPU nodes with 8 H100s; 200 users in 20 accounts with fair share;
multifactor weights on; with ``--assoc-limits`` the accounts sit under 4 parent accounts with
association limits), starts ``--running`` jobs, queues ``--pending`` more, then times
``schedule`` (priority sort over every pending job, main pass, backfill):

- the first pass after the submissions (every pending job gets its first reason: one
  ``JobPending`` fact each), EASY over every pending job (``bf_max_job_test`` = all);
- a steady pass right after it (reasons unchanged: no facts to emit), EASY over all;
- the same two with conservative backfill at Slurm's default ``bf_max_job_test=500``.

With ``--blocks N`` a block topology is applied before the jobs start: base blocks of N
consecutive nodes per partition, ``BlockSizes`` N, 2N, 4N, 8N, 16N; every job is then placed by
the block plugin and every backfill reservation asks it where the job would go.

With ``--gc-freeze`` the built state is moved out of the cyclic collector's sight first
(``gc.freeze()``), as a long-running shard owner should do after recovery; otherwise a full
collection that happens to fall inside the timed pass is counted too.

It prints the figures; it asserts nothing. The workload generator uses a seeded RNG (the
core itself never draws random numbers).
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler import (
    ApplyConfig,
    JobSpec,
    RegisterNode,
    ShardState,
    SubmitJob,
    decide,
    evolve,
    initial_state,
    parse_config,
    schedule,
)
from schemas.sluid import SluidClock, format_sluid, mint

T0 = 1_760_000_000_000
CONFIG = """
ClusterName: bench
SchedulerParameters: {{bf_policy: {policy}, bf_max_job_test: {max_test}, bf_resolution: 60,
                      bf_window: 2880}}
PriorityWeightAge: 1000
PriorityWeightFairshare: 10000
PriorityWeightJobSize: 500
PriorityWeightPartition: 1000
PriorityWeightQOS: 2000
Nodes:
  - NodeName: c[00001-{half:05d}]
    CPUs: 64
    RealMemory: 524288
  - NodeName: g[00001-{half:05d}]
    CPUs: 96
    RealMemory: 1048576
    Gres: gpu:h100:8
Partitions:
  - PartitionName: cpu
    Nodes: c[00001-{half:05d}]
    Default: YES
    MaxTime: 2-00:00:00
  - PartitionName: gpu
    Nodes: g[00001-{half:05d}]
    MaxTime: 2-00:00:00
    PriorityJobFactor: 2
QOS:
  - Name: normal
    Priority: 10
  - Name: high
    Priority: 100
Accounts:
{accounts}
"""


ASSOC_PARENT = """  - Name: p{p}
    GrpTRES: cpu={cpus},gres/gpu={gpus},node={nodes}
    GrpJobs: {jobs}
    MaxJobs: 40
    MaxWall: 2-00:00:00
    MaxTRESPerJob: node=32"""


def build_config(nodes: int, policy: str, max_test: int, assoc_limits: bool = False) -> str:
    """The cluster file; with ``assoc_limits`` the 20 accounts sit under 4 parents whose
    association limits (GrpTRES, GrpJobs, and MaxJobs, MaxWall, MaxTRESPerJob inherited by the
    children) bind part of the queue."""
    accounts = "\n".join(
        f"  - Name: a{a}\n    Fairshare: {1 + a % 4}\n"
        f"    Users: [{', '.join(f'u{u}' for u in range(a * 10, a * 10 + 10))}]"
        + (f"\n    Parent: p{a % 4}" if assoc_limits else "")
        for a in range(20)
    )
    if assoc_limits:  # each parent may use about 2/5 of the machine (4 parents: oversubscribed)
        parents = "\n".join(
            ASSOC_PARENT.format(
                p=p, cpus=nodes * 32, gpus=nodes * 8 // 5, nodes=nodes * 2 // 5, jobs=nodes // 4
            )
            for p in range(4)
        )
        accounts = parents + "\n" + accounts
    return CONFIG.format(half=nodes // 2, policy=policy, max_test=max_test, accounts=accounts)


class Builder:
    """Feeds requests through decide/evolve, minting client SLUIDs."""

    def __init__(self, config_text: str) -> None:
        self.state: ShardState = initial_state("bench", 9, parse_config(config_text))
        self.clock = SluidClock(3)
        self.now = T0

    def sluid(self) -> str:
        number, self.clock = mint(self.clock, self.now)
        return format_sluid(number)

    def apply(self, facts: list) -> None:  # type: ignore[type-arg]
        for fact in facts:
            self.state = evolve(self.state, fact)

    def request(self, request: object) -> None:
        self.apply(decide(self.state, request, self.now))  # type: ignore[arg-type]


def random_spec(rng: random.Random, gpu_share: float, max_nodes: int = 32) -> JobSpec:
    user = rng.randrange(200)
    if rng.random() < gpu_share:
        nodes = min(rng.choice((1, 1, 1, 2, 4, 8, 16)), max_nodes)
        gpus = rng.choice((1, 2, 4, 8)) if nodes == 1 else 8
        return JobSpec(
            user=f"u{user}",
            partition="gpu",
            nodes_min=nodes,
            ntasks=nodes * gpus,
            cpus_per_task=rng.choice((4, 8, 12)) // (2 if gpus == 8 else 1),
            gpus_per_node=gpus,
            gpu_type="h100",
            mem_per_node_mb=rng.choice((0, 65536, 262144)),
            time_limit_s=rng.choice((1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600)),
            qos=rng.choice(("normal", "normal", "high")),
            command=("train",),
        )
    nodes = min(rng.choice((1, 1, 1, 1, 2, 4, 8, 32)), max_nodes)
    return JobSpec(
        user=f"u{user}",
        partition="cpu",
        nodes_min=nodes,
        ntasks=nodes * rng.choice((1, 4, 16, 64)),
        cpus_per_task=1,
        mem_per_node_mb=rng.choice((0, 4096, 16384, 131072)),
        time_limit_s=rng.choice((600, 1800, 3600, 2 * 3600, 8 * 3600, 24 * 3600)),
        exclusive=rng.random() < 0.1,
        qos="normal",
        command=("sim",),
    )


def block_topology(nodes: int, size: int) -> str:
    """topology.conf text: base blocks of ``size`` consecutive nodes in each partition."""
    half = nodes // 2
    lines = [
        f"BlockName={prefix}b{k // size:04d} Nodes={prefix}[{k + 1:05d}-{min(k + size, half):05d}]"
        for prefix in ("c", "g")
        for k in range(0, half, size)
    ]
    sizes = ",".join(str(size << level) for level in range(5))
    return "\n".join([*lines, f"BlockSizes={sizes}"]) + "\n"


def build(
    nodes: int,
    running: int,
    pending: int,
    policy: str,
    max_test: int,
    assoc: bool = False,
    blocks: int = 0,
) -> Builder:
    rng = random.Random(42)
    builder = Builder(build_config(nodes, policy, max_test, assoc))
    half = nodes // 2
    for prefix, count, cpus, mem, gpus in (("c", half, 64, 524288, 0), ("g", half, 96, 1048576, 8)):
        for i in range(1, count + 1):
            builder.request(
                RegisterNode(
                    node_sluid=builder.sluid(),
                    name=f"{prefix}{i:05d}",
                    cpus=cpus,
                    mem_mb=mem,
                    gpus=gpus,
                    gpu_type="h100" if gpus else "",
                )
            )
    if blocks:
        text = block_topology(nodes, blocks)
        builder.request(ApplyConfig(config_sluid=builder.sluid(), kind="topology", text=text))
    while len(builder.state.running) < running:  # fill: small jobs, a pass, until enough run
        for _ in range(min(500, running - len(builder.state.running))):
            builder.request(
                SubmitJob(job_sluid=builder.sluid(), spec=random_spec(rng, 0.5, max_nodes=2))
            )
        builder.now += 1000
        builder.apply(schedule(builder.state, builder.now))
    for _ in range(max(pending - len(builder.state.pending), 0)):
        builder.now += 1
        builder.request(SubmitJob(job_sluid=builder.sluid(), spec=random_spec(rng, 0.5)))
    return builder


def shard_arguments(parser: argparse.ArgumentParser) -> None:
    """The size options of the benchmarks that time one request on this shard."""
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pending", type=int, default=50_000)
    parser.add_argument("--running", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=5)


def settled_shard(args: argparse.Namespace) -> Builder:
    """The shard of ``build`` (EASY, ``bf_max_job_test`` 500) a minute later with one pass
    folded, as the request benchmarks time it; prints its size."""
    built = time.perf_counter()
    builder = build(args.nodes, args.running, args.pending, "easy", 500)
    builder.now += 60_000
    builder.apply(schedule(builder.state, builder.now))
    print(f"shard: {args.nodes} nodes, {len(builder.state.pending)} pending, "
          f"{len(builder.state.running)} running (built in {time.perf_counter() - built:.0f} s)")
    return builder


def set_policy(state: ShardState, policy: str) -> None:
    """Switch a built shard's scheduler policy (the configuration object only)."""
    config = state.config
    state.meta.config = replace(config, scheduler=replace(config.scheduler, policy=policy))


def timed_pass(builder: Builder, label: str) -> None:
    builder.now += 60_000
    start = time.perf_counter()
    cpu = time.process_time()
    facts = schedule(builder.state, builder.now)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    kinds: dict[str, int] = {}
    for fact in facts:
        kinds[type(fact).__name__] = kinds.get(type(fact).__name__, 0) + 1
    print(f"  {label:<38} wall {wall:6.3f} s  cpu {cpu:6.3f} s  facts {kinds}")
    builder.apply(facts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pending", type=int, default=50_000)
    parser.add_argument("--running", type=int, default=5_000)
    parser.add_argument("--blocks", type=int, default=0,
                        help="apply a block topology with base blocks of this many nodes")
    parser.add_argument("--gc-freeze", action="store_true",
                        help="gc.freeze() after building, as a long-running shard owner would")
    parser.add_argument("--assoc-limits", action="store_true",
                        help="put the accounts under 4 parents with association limits")
    args = parser.parse_args()
    for policy, max_test in (("easy", 1_000_000), ("conservative", 500)):
        start = time.perf_counter()
        builder = build(
            args.nodes, args.running, args.pending, policy, max_test, args.assoc_limits,
            args.blocks,
        )
        state = builder.state
        if args.gc_freeze:
            gc.collect()
            gc.freeze()
        print(
            f"{policy} (bf_max_job_test={max_test}): {len(state.nodes)} nodes, "
            f"{len(state.running)} running, {len(state.pending)} pending"
            f"{f', blocks of {args.blocks}' if args.blocks else ''} "
            f"(built in {time.perf_counter() - start:.1f} s)"
        )
        timed_pass(builder, "first pass (every reason recorded)")
        timed_pass(builder, "steady pass (no reason changes)")
        if args.assoc_limits:
            reasons: dict[str, int] = {}
            for sluid in state.pending:
                reason = state.jobs[sluid].reason
                reasons[reason] = reasons.get(reason, 0) + 1
            print(f"  pending reasons: {dict(sorted(reasons.items(), key=lambda r: -r[1]))}")


if __name__ == "__main__":
    main()
