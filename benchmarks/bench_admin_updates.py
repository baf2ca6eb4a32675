"""What the administrator's updates add: the intake's request counter (sdiag's RPC counts), a
running job's ``TimeLimit=`` decided and folded, and a pass with an operator's priority.

    .venv/bin/python benchmarks/bench_admin_updates.py [--nodes 2000] [--pending 5000]
                                                       [--running 1000] [--repeat 5]

Times, on one core: (1) the intake's per-request count (``INTAKE_REQUESTS``' child ``inc``,
the child looked up once per kind, as ``IntakeBatch._plan`` does); (2) on the shard of
``benchmarks/bench_pass.py`` (EASY), ``decide`` + ``evolve`` of an operator's ``UpdateJob``
raising a running job's time limit; (3) the pass's queue order (``ordered_queue``: the
priorities and the sort) as it is, then with one pending job given an operator's priority
(``JobPrioritySet``); (4) ``decide`` of a ``PlanPriorities`` (sprio): a new answer, and a
reuse. Prints CPU medians and the machine's load average; asserts nothing.
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

from bench_pass import build

from agents.metrics import INTAKE_REQUESTS
from scheduler import UpdateJob, decide, evolve, schedule
from scheduler.records import JobPrioritySet, PlanPriorities
from scheduler.scheduling.priority import ordered_queue
from scheduler.shard.stamp import Stamper


def _count_cost() -> float:
    """CPU µs per counted request (a dict lookup of the kind's child, then ``inc``)."""
    counted: dict[str, object] = {}
    kinds = ("SubmitJob", "CancelJob", "UpdateJob", "ReportJobExit")
    count = 400_000
    cpu = time.process_time()
    for k in range(count):
        name = kinds[k & 3]
        child = counted.get(name)
        if child is None:
            child = counted[name] = INTAKE_REQUESTS.labels(name)
        child.inc()  # type: ignore[attr-defined]
    return (time.process_time() - cpu) / count * 1e6


def _order_cpu(builder: object, repeat: int) -> float:
    """CPU ms of the pass's queue order (``ordered_queue``: priorities, then the sort), where
    an operator's priority is applied."""
    state, now = builder.state, builder.now  # type: ignore[attr-defined]
    cpus = []
    for _ in range(repeat):
        cpu = time.process_time()
        ordered_queue(state, now)
        cpus.append(time.process_time() - cpu)
    return statistics.median(cpus) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2_000)
    parser.add_argument("--pending", type=int, default=5_000)
    parser.add_argument("--running", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"intake: count a request by kind: {_count_cost():.3f} µs CPU per request")
    builder = build(args.nodes, args.running, args.pending, "easy", 500)
    builder.now += 60_000
    for fact in schedule(builder.state, builder.now):
        builder.state = evolve(builder.state, fact)
    state = builder.state
    print(f"shard: {args.nodes} nodes, {len(state.pending)} pending, "
          f"{len(state.running)} running")
    running = sorted(state.running)[: args.repeat]
    cpus = []
    for sluid in running:
        limit = state.jobs[sluid].time_limit_s + 3_600
        request = UpdateJob(job_sluid=sluid, user="", changes={"time_limit_s": str(limit)})
        cpu = time.process_time()
        for fact in decide(state, request, builder.now):
            state = evolve(state, fact)
        cpus.append(time.process_time() - cpu)
    builder.state = state
    print(f"  decide+evolve UpdateJob TimeLimit (running)  cpu median "
          f"{statistics.median(cpus) * 1000:9.3f} ms")
    print(f"  queue order, no operator priority            cpu median "
          f"{_order_cpu(builder, args.repeat):9.3f} ms")
    last = sorted(state.pending)[-1]
    stamp = Stamper(state, builder.now)
    state = builder.state = evolve(state, JobPrioritySet(**stamp.meta(), job_sluid=last,
                                                         priority=10**6))
    print(f"  queue order, one job with operator priority  cpu median "
          f"{_order_cpu(builder, args.repeat):9.3f} ms")
    cpus, reused = [], []
    for k in range(args.repeat):  # each 10 s apart (record time): a new answer each time
        request = PlanPriorities(request_sluid=builder.sluid(), user="u7", nonce=k + 1)
        now = builder.now + k * 10_000
        cpu = time.process_time()
        facts = decide(state, request, now)
        cpus.append(time.process_time() - cpu)
        for fact in facts:
            state = evolve(state, fact)
        again = PlanPriorities(request_sluid=builder.sluid(), user="u7", nonce=k + 100)
        cpu = time.process_time()
        decide(state, again, now + 1)
        reused.append(time.process_time() - cpu)
    jobs = len(facts[0].job_sluids)  # type: ignore[attr-defined]
    print(f"  decide(PlanPriorities) sprio, {jobs} jobs listed cpu median "
          f"{statistics.median(cpus) * 1000:9.3f} ms; "
          f"a reuse {statistics.median(reused) * 1000:.3f} ms")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
