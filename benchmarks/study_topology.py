"""Flat versus block placement on an NVL72-class cluster (issue 3): the figures.

    .venv/bin/python benchmarks/study_topology.py [--seeds 5] [--jobs 0] [--share 0.2]
        [--load 0.9] [--variants flat,block,block+frag] [--count-tie-breaks] [--json FILE]

Generates the synthetic NVL72 cluster (32 racks x 18 nodes x 4 GPUs, one base block per rack,
BlockSizes=18,36,72,144) and, for each seed, a multi-node training mix from the Alibaba GPU
trace (rules in ``sim/topology_study.py``), simulates it under EASY backfill with flat, block
and block + fragmentation-aware placement, and prints: the first seed's table, then every
metric's mean over the seeds and the paired difference block+frag - block per seed. With
``--count-tie-breaks`` every placement of the block+frag runs is also computed without the
tie-break (the script wraps the core's ``place_job``; the run still uses the tie-break's answer)
and the decisions where the two differ are counted. It asserts nothing. The trace defaults to
``../shared/traces/gpu/alibaba-gpu-v2023`` next to the repo.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim.topology_study import (
    MULTI_GPU_FILE,
    PODS_FILE,
    VARIANTS,
    MixSpec,
    generate_mix,
    load_multi_gpu_counts,
    load_pods,
    nvl_cluster,
    run_variant,
)

TRACE = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "traces" / "gpu" / "alibaba-gpu-v2023"
)

ROWS = (
    ("multi-node jobs placed inside one base block (of those <= 18 nodes)", "in_one_base_block"),
    ("multi-node jobs inside one lowest-level aggregate they fit", "in_lowest_aggregate"),
    ("base blocks touched beyond the minimum, per multi-node job", "excess_blocks_per_job"),
    ("fully free base blocks (of 32), time-weighted mean", "free_base_blocks_mean"),
    ("  sampled every 5 min: min / p10 / p50", "free_base_blocks_min"),
    ("fully free 36-node aggregates (of 16), mean", "free_36_mean"),
    ("fully free 72-node aggregates (of 8), mean", "free_72_mean"),
    ("GPU utilization over the makespan", "gpu_utilization"),
    ("GPU utilization while jobs arrive", "window_gpu_utilization"),
    ("mean wait (s)", "avg_wait_s"),
    ("  multi-node jobs / single-node jobs", "multi_avg_wait_s"),
    ("mean bounded slowdown", "avg_bounded_slowdown"),
    ("makespan (s)", "makespan_s"),
    ("simulated jobs per wall second", "jobs_per_wall_s"),
)
COMPARED = (
    "free_base_blocks_mean",
    "free_36_mean",
    "free_72_mean",
    "window_gpu_utilization",
    "gpu_utilization",
    "avg_wait_s",
    "multi_avg_wait_s",
    "avg_bounded_slowdown",
    "makespan_s",
)


def _cell(figures: dict[str, Any], key: str) -> str:
    if key == "free_base_blocks_min":
        return (
            f"{figures['free_base_blocks_min']:.3g} / {figures['free_base_blocks_p10']:.3g} / "
            f"{figures['free_base_blocks_p50']:.3g}"
        )
    if key == "multi_avg_wait_s":
        return f"{figures['multi_avg_wait_s']:,.0f} / {figures['single_avg_wait_s']:,.0f}"
    value = figures[key]
    if key.startswith("in_") or "utilization" in key:
        return f"{100 * value:.1f} %"
    if isinstance(value, float) and abs(value) < 100:
        return f"{value:.2f}"
    return f"{value:,.0f}"


def print_table(by_variant: dict[str, dict[str, Any]]) -> None:
    """One seed's figures as a Markdown table, a column per variant."""
    variants = list(by_variant)
    print("| metric | " + " | ".join(variants) + " |")
    print("|---" * (len(variants) + 1) + "|")
    for label, key in ROWS:
        cells = [_cell(by_variant[v], key) for v in variants]
        print(f"| {label} | " + " | ".join(cells) + " |")


class TieBreakCounter:
    """Wraps the pass's ``place_job``: places with and without the tie-break, counts the
    decisions where they differ, returns the answer the configuration asks for."""

    def __init__(self) -> None:
        self.module: Any = sys.modules["scheduler.schedule"]  # the module, not schedule()
        self.original = self.module.place_job
        self.calls = self.changed = 0

    def __enter__(self) -> TieBreakCounter:
        self.module.place_job = self.place
        return self

    def __exit__(self, *exc: object) -> None:
        self.module.place_job = self.original

    def place(self, *args: Any, fragmentation_aware: bool = False, **kwargs: Any) -> Any:
        with_it = self.original(*args, fragmentation_aware=True, **kwargs)
        without = self.original(*args, fragmentation_aware=False, **kwargs)
        self.calls += 1
        if isinstance(with_it, str) or isinstance(without, str):
            self.changed += with_it != without
        else:
            self.changed += with_it[0].tolist() != without[0].tolist()
        return with_it if fragmentation_aware else without


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default=str(TRACE), help="the Alibaba GPU trace directory")
    parser.add_argument("--seeds", type=int, default=5, help="mixes to simulate")
    parser.add_argument("--first-seed", type=int, default=2023)
    parser.add_argument("--jobs", type=int, default=0, help="first N pods only (0 = all)")
    parser.add_argument("--share", type=float, default=0.2, help="multi-node share")
    parser.add_argument("--load", type=float, default=0.9, help="offered GPU load")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--count-tie-breaks", action="store_true")
    parser.add_argument("--json", default="", help="also write every figure to this file")
    return parser.parse_args()


def run_seeds(args: argparse.Namespace, trace: Path) -> list[dict[str, dict[str, Any]]]:
    """Every seed's figures, by variant; prints each run as it ends."""
    pods = load_pods(trace / PODS_FILE)
    counts = load_multi_gpu_counts(trace / MULTI_GPU_FILE)
    cluster = nvl_cluster()
    per_seed = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        spec = MixSpec(
            seed=seed, jobs=args.jobs, multi_node_share=args.share, target_load=args.load
        )
        mix = generate_mix(pods, counts, spec, cluster.shape)
        print(
            f"seed {seed}: {len(mix.jobs)} jobs, {mix.multi_node} multi-node, sizes "
            f"{mix.size_histogram()}, arrival scale {mix.arrival_scale:.4f}, offered load "
            f"{mix.offered_load:.2f}",
            flush=True,
        )
        figures = {}
        for variant in args.variants.split(","):
            if args.count_tie_breaks and variant == "block+frag":
                with TieBreakCounter() as counter:
                    result = run_variant(mix, cluster, variant).as_json()
                result |= {"decisions": counter.calls, "changed_by_tie_break": counter.changed}
            else:
                result = run_variant(mix, cluster, variant).as_json()
            figures[variant] = result | {"seed": seed}
            print(f"  {variant}: {json.dumps(figures[variant])}", flush=True)
        per_seed.append(figures)
    return per_seed


def report(per_seed: list[dict[str, dict[str, Any]]], count_tie_breaks: bool) -> None:
    """The first seed's table, the means over the seeds, the paired differences."""
    first = per_seed[0]
    print(f"seed {next(iter(first.values()))['seed']}:\n")
    print_table(first)
    if len(per_seed) > 1:
        print(f"\nmean over {len(per_seed)} seeds:\n")
        means = {
            v: {
                k: statistics.fmean(float(s[v][k]) for s in per_seed)
                for k in first[v]
                if isinstance(first[v][k], int | float)
            }
            for v in first
        }
        print_table(means)
    if "block" not in first or "block+frag" not in first:
        return
    print("\nblock+frag - block, per seed (negative wait / slowdown / makespan = better):\n")
    print("| metric | " + " | ".join(str(s["block"]["seed"]) for s in per_seed) + " | mean |")
    print("|---" * (len(per_seed) + 2) + "|")
    for key in COMPARED:
        deltas = [float(s["block+frag"][key]) - float(s["block"][key]) for s in per_seed]
        cells = " | ".join(f"{d:+.3g}" for d in deltas)
        print(f"| {key} | {cells} | {statistics.fmean(deltas):+.3g} |")
    if count_tie_breaks:
        cells = " | ".join(
            f"{s['block+frag']['changed_by_tie_break']} of {s['block+frag']['decisions']:,}"
            for s in per_seed
        )
        print(f"| placements the tie-break changed | {cells} | |")


def main() -> None:
    args = parse_args()
    trace = Path(args.trace)
    if not (trace / PODS_FILE).exists():
        print(f"{trace / PODS_FILE}: not found (the public traces live in ../shared/traces)")
        return
    started = time.perf_counter()
    per_seed = run_seeds(args, trace)
    print(
        f"\n576 nodes, 2,304 GPUs; EASY backfill; multi-node share {args.share}, offered load "
        f"{args.load}; {time.perf_counter() - started:.0f} s wall\n"
    )
    report(per_seed, args.count_tie_breaks)
    if args.json:
        every = [f for s in per_seed for f in s.values()]
        Path(args.json).write_text(json.dumps(every, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
