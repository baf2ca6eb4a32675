"""The simulator's speed: the whole SDSC-SP2 trace under EASY backfilling.

    .venv/bin/python benchmarks/bench_sim.py [TRACE ...] [--policy easy] [--gc-freeze]

Prints the metrics (to compare with the literature; unrounded too, to compare two trees to the
last digit) and the speed: wall and CPU seconds, jobs per second, facts per second, with the
load average before and after the run (the machine is shared). With ``--gc-freeze`` the trace
is read and then ``gc.freeze()`` moves it out of the collector's sight, as a long-running shell
would after recovery. It asserts nothing. Traces default to ``../shared/traces/swf`` next to
the repo.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sim import SimOptions, load_swf, simulate

TRACES = Path(__file__).resolve().parents[1] / ".." / "shared" / "traces" / "swf"
DEFAULT = TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="*", default=[str(DEFAULT)])
    parser.add_argument("--policy", default="easy", choices=("fcfs", "easy", "conservative"))
    parser.add_argument("--gc-freeze", action="store_true")
    args = parser.parse_args()
    for trace in args.traces:
        path = Path(trace)
        if not path.exists():
            print(f"{path}: not found (the public traces live in ../shared/traces)")
            continue
        workload = load_swf(path)
        if args.gc_freeze:
            gc.collect()
            gc.freeze()
        load = os.getloadavg()
        cpu = time.process_time()
        result = simulate(workload, SimOptions(policy=args.policy))
        cpu = time.process_time() - cpu
        load_after = os.getloadavg()
        print(
            f"{path.name} ({len(workload.machine)} procs, policy {args.policy}): "
            f"{result.jobs} jobs, {result.dropped} dropped {result.dropped_by_reason}"
        )
        print(
            f"  avg wait {result.avg_wait_s:.0f} s, avg bounded slowdown "
            f"{result.avg_bounded_slowdown:.2f}, utilization {result.utilization:.4f}, "
            f"makespan {result.makespan_s:.0f} s"
        )
        print(
            f"  unrounded: avg wait {result.avg_wait_s!r} s, bounded slowdown "
            f"{result.avg_bounded_slowdown!r}, utilization {result.utilization!r}"
        )
        print(
            f"  wall {result.wall_s:.2f} s, cpu {cpu:.2f} s, {result.jobs_per_s:.0f} jobs/s, "
            f"{result.facts / result.wall_s:.0f} facts/s ({result.facts} facts, "
            f"{result.passes} passes); load average {load[0]:.2f} before, "
            f"{load_after[0]:.2f} after"
        )


if __name__ == "__main__":
    main()
