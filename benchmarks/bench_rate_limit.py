"""What a rate-limited ``sbatch --test-only`` costs, against one the limit admits.

    .venv/bin/python benchmarks/bench_rate_limit.py [--nodes 2000] [--pending 5000]
                                                    [--running 1000] [--repeat 5]

Times, on one core, (1) the intake's verdict (``RateLimiter.admit``, per request, a flood of
one user over 1,000 users' buckets), and (2) on the shard of ``benchmarks/bench_pass.py``
(EASY), ``decide`` of a ``TestSubmitJob`` for a one-node job as a user the limit admits (the
planning pass with the test in the queue) and as one it refused (sealed ``RateLimited``: one
``RequestDenied``). Prints CPU medians and the machine's load average; asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pass import build

from agents.rate_limit import RATE_LIMITED, RateLimiter, parse_rate_limits
from scheduler import JobSpec, decide, evolve, schedule
from scheduler.access.identity import Attributed, Identity
from scheduler.records import TestSubmitJob

SMALL = JobSpec(user="u7", partition="cpu", nodes_min=1, ntasks=4, time_limit_s=3600,
                qos="normal", command=("sim",))


def _admit_cost(parameters: str) -> float:
    """CPU µs per ``admit`` of a flooding user, with 1,000 other users' buckets held (its
    refusals logged as ``rl_log_freq`` says, to a handler that drops them)."""
    limiter = RateLimiter(parse_rate_limits(parameters))
    for n in range(1000):
        limiter.admit(Identity(user=f"u{n}", kind="jwt"), "SubmitJob", 0)
    flooder = Identity(user="u7", kind="jwt")
    count, now = 200_000, 1_000_000
    cpu = time.process_time()
    for k in range(count):
        limiter.admit(flooder, "TestSubmitJob", now + k // 100)
    return (time.process_time() - cpu) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2_000)
    parser.add_argument("--pending", type=int, default=5_000)
    parser.add_argument("--running", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    logging.getLogger().addHandler(logging.NullHandler())
    logging.lastResort = None
    for parameters in ("rl_enable", "rl_enable,rl_log_freq=1"):
        print(f"intake verdict (RateLimiter.admit, {parameters}): "
              f"{_admit_cost(parameters):.2f} µs CPU per request")
    builder = build(args.nodes, args.running, args.pending, "easy", 500)
    builder.now += 60_000
    for fact in schedule(builder.state, builder.now):
        builder.state = evolve(builder.state, fact)
    print(f"shard: {args.nodes} nodes, {len(builder.state.pending)} pending, "
          f"{len(builder.state.running)} running")
    user = Identity(user="u7", kind="jwt")
    for label, identity in (("admitted", user),
                            ("refused RateLimited", Identity(
                                user="u7", kind="jwt", denied=RATE_LIMITED,
                                detail="Rate limit exceeded, please retry momentarily"))):
        cpus, names = [], set()
        for _ in range(args.repeat):
            request = Attributed(request=TestSubmitJob(job_sluid=builder.sluid(), spec=SMALL,
                                                       nonce=1), identity=identity)
            cpu = time.process_time()
            facts = decide(builder.state, request, builder.now)
            cpus.append(time.process_time() - cpu)
            names |= {type(f).__name__ for f in facts}
        print(f"  decide(TestSubmitJob) {label:<20} cpu median "
              f"{statistics.median(cpus) * 1000:9.3f} ms  -> {sorted(names)}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
