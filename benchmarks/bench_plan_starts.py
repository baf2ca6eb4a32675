"""What one ``squeue --start`` costs a shard: ``decide(PlanStarts)`` at scale.

    .venv/bin/python benchmarks/bench_plan_starts.py [--nodes 10000] [--pending 50000]
                                                     [--running 5000] [--repeat 5]

Builds the shard of ``benchmarks/bench_pass.py`` (two partitions, multifactor priorities, fair
share; the same seeded workload), folds one pass, then times ``decide`` of a ``PlanStarts``
(the scheduling pass, then the conservative plan of the first ``bf_max_job_test`` = 500 waiting
jobs) under EASY, conservative and FCFS, each decided at a time past the 10 s reuse window; and
the reuse (a request within 10 s of the plan, folded). A plan runs on the shard's thread
between other requests, so its cost is time the shard decides nothing else. Prints the median
and largest of ``--repeat`` runs (wall and CPU), one whole pass of the same shard for scale,
the encoded size of the answer, and the machine's load average; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pass import set_policy, settled_shard, shard_arguments

from scheduler import decide, evolve
from scheduler.jobs.starts import STARTS_REUSE_MS
from scheduler.records import PlanStarts, StartsPlanned
from scheduler.records.binary import encode_record
from scheduler.schedule import schedule_with_plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shard_arguments(parser)
    args = parser.parse_args()
    builder = settled_shard(args)
    answer: StartsPlanned | None = None
    for policy in ("easy", "conservative", "fcfs"):
        set_policy(builder.state, policy)
        cpu = time.process_time()
        schedule_with_plan(builder.state, builder.now)  # a whole pass (not carried), for scale
        print(f"  {policy:<12} one whole pass (for scale)  cpu {time.process_time() - cpu:6.3f} s")
        walls, cpus = [], []
        for _ in range(args.repeat):
            request = PlanStarts(request_sluid=builder.sluid(), user="u7", nonce=1)
            start, cpu = time.perf_counter(), time.process_time()
            [fact] = decide(builder.state, request, builder.now)  # not folded: a new plan each
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
            assert isinstance(fact, StartsPlanned) and not fact.reuses
            answer = fact
        assert answer is not None
        planned = sum(1 for s in answer.starts_ms if s)
        print(f"  {policy:<12} plan: wall median {statistics.median(walls):6.3f} s "
              f"max {max(walls):6.3f} s  cpu median {statistics.median(cpus):6.3f} s  "
              f"({planned} jobs planned, answer {len(encode_record(answer))} bytes)")
    assert answer is not None
    builder.state = evolve(builder.state, answer)
    request = PlanStarts(request_sluid=builder.sluid(), user="u7", nonce=2)
    start, cpu = time.perf_counter(), time.process_time()
    [reuse] = decide(builder.state, request, answer.time_ms + STARTS_REUSE_MS - 1)
    assert isinstance(reuse, StartsPlanned) and reuse.reuses == answer.event_sluid
    print(f"  reuse within 10 s: wall {time.perf_counter() - start:8.6f} s "
          f"cpu {time.process_time() - cpu:8.6f} s")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
