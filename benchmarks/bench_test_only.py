"""What one ``sbatch --test-only`` costs the shard: ``decide(TestSubmitJob)`` at scale.

    .venv/bin/python benchmarks/bench_test_only.py [--nodes 10000] [--pending 50000]
                                                   [--running 5000] [--repeat 5]

Builds the shard of ``benchmarks/bench_pass.py`` (two partitions, multifactor priorities, fair
share; the same seeded workload), folds one pass, then times ``decide`` of a ``TestSubmitJob``
(the whole decision: the submission's checks and the planning pass with the test in the queue)
for a one-node CPU job and an 8-node GPU job, under EASY, conservative (``bf_max_job_test`` 500)
and FCFS. A test runs on the shard's thread between other requests, so its cost is time the
shard is not deciding anything else. It prints the median and the largest of ``--repeat`` runs
(wall and CPU), the CPU of one whole scheduling pass of the same shard under the same policy
(``schedule_with_plan``, not carried on) for scale, and the machine's load average; it asserts
nothing.
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

from scheduler import JobSpec, decide
from scheduler.records import JobTestAnswered, TestSubmitJob
from scheduler.schedule import schedule_with_plan

SMALL = JobSpec(user="u7", partition="cpu", nodes_min=1, ntasks=4, time_limit_s=3600,
                qos="normal", command=("sim",))
WIDE = JobSpec(user="u8", partition="gpu", nodes_min=8, ntasks=64, gpus_per_node=8,
               gpu_type="h100", time_limit_s=4 * 3600, qos="normal", command=("train",))



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shard_arguments(parser)
    args = parser.parse_args()
    builder = settled_shard(args)
    for policy in ("easy", "conservative", "fcfs"):
        set_policy(builder.state, policy)
        cpu = time.process_time()
        schedule_with_plan(builder.state, builder.now)  # a whole pass (not carried), for scale
        print(f"  {policy:<12} one whole pass (for scale)          "
              f"cpu {time.process_time() - cpu:6.3f} s")
        for label, spec in (("1-node CPU job", SMALL), ("8-node GPU job", WIDE)):
            walls, cpus = [], []
            answer = None
            for _ in range(args.repeat):
                request = TestSubmitJob(job_sluid=builder.sluid(), spec=spec, nonce=1)
                start, cpu = time.perf_counter(), time.process_time()
                [answer] = decide(builder.state, request, builder.now)
                walls.append(time.perf_counter() - start)
                cpus.append(time.process_time() - cpu)
            assert isinstance(answer, JobTestAnswered)
            wait_s = (answer.start_ms - builder.now) / 1000
            print(f"  {policy:<12} {label:<15} wall median {statistics.median(walls):6.3f} s "
                  f"max {max(walls):6.3f} s  cpu median {statistics.median(cpus):6.3f} s  "
                  f"(answer: +{wait_s:.0f} s on {answer.nodes or answer.reason})")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
