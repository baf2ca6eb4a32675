"""Multi-node placement decisions per second at 10,000 nodes with a block topology.

Usage::

    .venv/bin/python benchmarks/bench_placement.py [--nodes 10000] [--decisions 5000]

The cluster is ``nodes`` nodes in base blocks of 18 (GB200 NVL72 racks), ``BlockSizes=18,36,
72,144,288``. A fixed-seed workload of multi-node jobs (2-288 nodes, some with --segment,
--spread-segments, --consolidate-segments or --exclusive=topo) is placed one decision at a
time; placed jobs occupy their nodes and the oldest jobs end so that the cluster stays
about ``--occupancy`` (85 %) busy, so decisions see a fragmented cluster and some jobs do
not fit. Each ``place`` call is one decision, placed or not. One process, one thread
(BLAS/OpenMP threads are pinned to 1 before numpy loads).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections import deque
from pathlib import Path

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from scheduler.topology import (
    Availability,
    NamedTopology,
    Placement,
    PlacementRequest,
    build_index,
    place,
)
from scheduler.topology.block import BlockIndex
from scheduler.topology.config import BlockConfig, BlockDef

BBLOCK = 18
SIZES = (18, 36, 72, 144, 288)


def cluster(node_count: int) -> BlockIndex:
    """``node_count`` nodes in base blocks of 18 (the last one may be partial)."""
    names = [f"gb{i:05d}" for i in range(node_count)]
    blocks = tuple(
        BlockDef(f"nvl{b:04d}", tuple(names[start : start + BBLOCK]))
        for b, start in enumerate(range(0, node_count, BBLOCK))
    )
    index = build_index(NamedTopology("nvl72", BlockConfig(blocks, SIZES), True), names)
    assert isinstance(index, BlockIndex)
    return index


def workload(count: int, seed: int) -> list[PlacementRequest]:
    """A fixed mix of multi-node requests."""
    rng = random.Random(seed)
    jobs: list[PlacementRequest] = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.30:
            jobs.append(PlacementRequest(rng.randint(2, 8)))
        elif roll < 0.55:
            jobs.append(PlacementRequest(rng.choice([16, 18])))
        elif roll < 0.70:
            jobs.append(PlacementRequest(rng.choice([32, 36, 54, 72])))
        elif roll < 0.78:
            jobs.append(PlacementRequest(rng.choice([128, 144, 288])))
        elif roll < 0.88:
            segment = rng.choice([4, 9, 18])
            jobs.append(
                PlacementRequest(
                    segment * rng.randint(2, 8),
                    segment=segment,
                    spread_segments=rng.random() < 0.3,
                    consolidate_segments=rng.random() < 0.3,
                )
            )
        else:
            jobs.append(PlacementRequest(rng.choice([18, 36, 72]), exclusive_topo=True))
    return jobs


def run(node_count: int, decisions: int, seed: int, occupancy: float) -> dict[str, float]:
    """Place ``decisions`` jobs; return timing figures."""
    index = cluster(node_count)
    busy = np.zeros(node_count, dtype=bool)
    held = np.zeros(node_count, dtype=bool)
    running: deque[tuple[np.ndarray, bool]] = deque()
    placed = 0
    timings: list[float] = []
    for request in workload(decisions, seed):
        availability = Availability(~busy, busy=busy, exclusive_busy=held)
        start = time.perf_counter()
        result = place(index, request, availability)
        timings.append(time.perf_counter() - start)
        if isinstance(result, Placement):
            placed += 1
            nodes = np.asarray(
                result.indices + tuple(index.nodes.indices(result.blocked_nodes)), dtype=np.intp
            )
            busy[nodes] = True
            if request.exclusive_topo:
                held[nodes] = True
            running.append((nodes, request.exclusive_topo))
        while busy.mean() > occupancy and running:
            nodes, exclusive = running.popleft()
            busy[nodes] = False
            if exclusive:
                held[nodes] = False
    total = sum(timings)
    return {
        "decisions": float(decisions),
        "placed": float(placed),
        "seconds": total,
        "per_second": decisions / total,
        "median_us": statistics.median(timings) * 1e6,
        "p99_us": sorted(timings)[int(0.99 * len(timings))] * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--decisions", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--occupancy", type=float, default=0.85)
    args = parser.parse_args()
    run(args.nodes, 200, args.seed + 1, args.occupancy)  # warm up
    figures = run(args.nodes, args.decisions, args.seed, args.occupancy)
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} "
        f"python {platform.python_version()} numpy {np.__version__}, one thread"
    )
    print(f"cluster: {args.nodes} nodes, base blocks of {BBLOCK}, BlockSizes={SIZES}")
    print(
        f"decisions: {int(figures['decisions'])} ({int(figures['placed'])} placed) "
        f"in {figures['seconds']:.3f} s"
    )
    print(f"placement decisions per second: {figures['per_second']:.0f}")
    print(f"latency: median {figures['median_us']:.0f} us, p99 {figures['p99_us']:.0f} us")


if __name__ == "__main__":
    main()
