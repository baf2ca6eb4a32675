"""Fair Tree's cost in a scheduling pass: ``fair_tree`` over a configured tree with usage.

    .venv/bin/python benchmarks/bench_fair_tree.py [--accounts 50] [--users 20] [--jobs 5000]

A shard whose configuration has ``--accounts`` accounts of ``--users`` users each, every user
and account with usage, and a pass whose pending jobs (``--jobs``) spread over those users: the
CPU a pass spends on the fair-share factor (:func:`scheduler.scheduling.fair_tree.fair_tree`,
called once a pass when ``PriorityWeightFairshare`` is set), median of 20, with the load
average before and after. It asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scheduler.config.cluster import parse_config
from scheduler.scheduling.fair_tree import fair_tree
from scheduler.shard.state import initial_state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accounts", type=int, default=50)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=5000)
    args = parser.parse_args()
    accounts = "\n".join(
        f"  - Name: a{i}\n    Users: [{', '.join(f'u{i}_{j}' for j in range(args.users))}]"
        for i in range(args.accounts))
    config = parse_config(f"PriorityWeightFairshare: 1000\nAccounts:\n{accounts}\n")
    state = initial_state("bench", 2, config=config)
    usage = state.meta.usage
    for i in range(args.accounts):
        for j in range(args.users):
            usage[f"user:a{i}:u{i}_{j}"] = float(i * j + 1)
        usage[f"account:a{i}"] = float(sum(i * j + 1 for j in range(args.users)))
    usage["account:root"] = sum(v for k, v in usage.items() if k.startswith("account:"))
    pairs = [(f"a{k % args.accounts}", f"u{k % args.accounts}_{k % args.users}")
             for k in range(args.jobs)]
    load = os.getloadavg()
    times = []
    for _ in range(20):
        start = time.process_time()
        fair_tree(state, pairs)
        times.append(time.process_time() - start)
    print(f"{args.accounts * args.users:,} users in {args.accounts} accounts, {args.jobs:,} "
          f"pending jobs: fair_tree {statistics.median(times) * 1000:.2f} ms CPU a pass "
          f"(median of 20; load {load[0]:.2f} -> {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
