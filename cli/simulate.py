"""``sluice simulate TRACE --policy fcfs|easy|conservative [--procs N] [--json]
[--failures FILE --requeue none|normal|expedite|hotswap]``.

Runs the scheduling core on a virtual clock over a Standard Workload Format trace (``.swf`` or
``.swf.gz``) or the Alibaba GPU trace (its directory, or one of its pod-list CSV files), and
prints the standard metrics. See docs/scheduling.md for the rules and the published settings.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cli.arg_parser import Parser
from cli.progress import progress
from sim import SimOptions, load_gpu_trace, load_swf, simulate
from sim.failures import FailureEvent, failure_events, load_lanl, pick_system
from sim.recovery import MODES
from sim.workload import Workload

__all__ = ["build_parser", "load_workload", "run"]


def build_parser() -> argparse.ArgumentParser:
    """The ``sluice simulate`` options."""
    parser = Parser(
        prog="sluice simulate",
        description="Simulate a workload trace through the Sluice scheduling core.",
    )
    parser.add_argument("trace", help="an SWF file (.swf or .swf.gz) or the Alibaba GPU trace")
    parser.add_argument("--policy", choices=("fcfs", "easy", "conservative"), default="easy")
    parser.add_argument(
        "--procs",
        type=int,
        default=None,
        help="machine size for SWF traces (default: MaxProcs from the header)",
    )
    parser.add_argument("--json", action="store_true", help="print the metrics as JSON")
    parser.add_argument(
        "--kill-at-limit",
        action="store_true",
        help="kill a job at its requested time instead of its recorded run time",
    )
    parser.add_argument("--max-jobs", type=int, default=0, help="simulate only the first N jobs")
    parser.add_argument(
        "--bf-window",
        type=int,
        default=43_200,
        help="backfill window in minutes (default 43200 = 30 days)",
    )
    parser.add_argument(
        "--bf-resolution",
        type=int,
        default=1,
        help="backfill time resolution in seconds (default 1)",
    )
    parser.add_argument(
        "--bf-max-job-test",
        type=int,
        default=1_000_000,
        help="jobs backfill considers per pass (default: all)",
    )
    parser.add_argument(
        "--topology",
        default=None,
        help="a topology.yaml or topology.conf over the machine's node names",
    )
    parser.add_argument(
        "--arrival-scale",
        type=float,
        default=1.0,
        help="multiply submit times by this (below 1 raises the load)",
    )
    parser.add_argument(
        "--failures",
        default=None,
        help="a LANL failure log (CSV): failures stop the running jobs of a node",
    )
    parser.add_argument(
        "--failure-system",
        type=int,
        default=None,
        help="the LANL system to replay (default: the one closest in node count)",
    )
    parser.add_argument(
        "--requeue",
        choices=MODES,
        default="normal",
        help="what happens to a job a failure stops (default normal, Slurm's JobRequeue=1)",
    )
    parser.add_argument(
        "--epilog", type=int, default=5, help="seconds a node's epilog takes (default 5)"
    )
    parser.add_argument(
        "--hot-swap-wait",
        type=int,
        default=60,
        help="HotSwapWait in seconds for --requeue hotswap (default 60)",
    )
    return parser


def load_workload(trace: str, procs: int | None) -> Workload:
    """Read a trace by its kind: SWF, or the Alibaba GPU CSV files."""
    path = Path(trace)
    if path.is_dir() or path.suffix == ".csv":
        return load_gpu_trace(path)
    return load_swf(path, procs)


def run(argv: list[str]) -> int:
    """Entry point for ``sluice simulate``; ``argv`` may start with ``simulate``."""
    args = build_parser().parse_args(argv[1:] if argv[:1] == ["simulate"] else argv)
    if not Path(args.trace).exists():
        print(f"sluice simulate: {args.trace}: no such file or directory", file=sys.stderr)
        return 2
    workload = load_workload(args.trace, args.procs)
    topology = Path(args.topology).read_text() if args.topology else ""
    failures: tuple[FailureEvent, ...] = ()
    system = None
    if args.failures:
        records = load_lanl(args.failures)
        size = len(workload.machine)
        system = (
            args.failure_system if args.failure_system is not None else pick_system(records, size)
        )
        jobs = workload.jobs[: args.max_jobs] if args.max_jobs else workload.jobs
        horizon = max((j.submit_s for j in jobs), default=0)
        failures = tuple(failure_events(records, system, size, horizon))
    options = SimOptions(
        policy=args.policy,
        kill_at_limit=args.kill_at_limit,
        bf_window_s=args.bf_window * 60,
        bf_resolution_s=args.bf_resolution,
        bf_max_job_test=args.bf_max_job_test,
        max_jobs=args.max_jobs,
        topology_text=topology,
        arrival_scale=args.arrival_scale,
        failures=failures,
        requeue=args.requeue if args.failures else "",
        epilog_s=args.epilog,
        hot_swap_wait_s=args.hot_swap_wait,
    )
    total = 2 * len(workload.jobs[: args.max_jobs] if args.max_jobs else workload.jobs)
    with progress(total, "simulate", "event", quiet=args.json) as advance:
        result = simulate(workload, options, advance)
    if system is not None:
        result.extra["failure_system"] = system
    if args.json:
        print(json.dumps(result.as_json(), indent=2, sort_keys=True))
        return 0
    print(f"{result.trace}: {result.nodes} nodes, policy {result.policy}")
    print(
        f"  jobs {result.jobs} simulated, {result.dropped} dropped "
        f"({', '.join(f'{k}: {v}' for k, v in result.dropped_by_reason.items()) or 'none'}),"
        f" {result.rejected} rejected"
    )
    print(f"  average wait        {result.avg_wait_s:12.1f} s")
    print(f"  bounded slowdown    {result.avg_bounded_slowdown:12.2f} (10 s bound)")
    print(f"  utilization         {result.utilization:12.4f}")
    print(f"  makespan            {result.makespan_s:12.0f} s")
    print(f"  wall                {result.wall_s:12.2f} s ({result.jobs_per_s:.0f} jobs/s)")
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
