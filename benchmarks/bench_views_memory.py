"""What the projections hold in memory per job: a fold of N job lifecycles under tracemalloc.

Usage::

    .venv/bin/python benchmarks/bench_views_memory.py [--jobs 6000] [--rate 2]

Each job is queued, pending, started and ended (a few seconds apart, ``--rate`` jobs a second of
ledger time), with a cycle after each. Two folds of the same facts, no broker: the plain views
(``Views()``, every row in memory: what the projections did before ``MinJobAge``) and the real
``ProjectionService`` over a RocksDB in a scratch directory (``fold``: views, metrics listener,
store, eviction), with ``SLUICE_MIN_JOB_AGE`` at its default. Prints the Python heap the fold
holds after each third of the jobs and the bytes per job over the last two thirds (the slope).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker import machine_line

from projections.metrics import FactMetrics
from projections.service import ProjectionService
from projections.views import Views
from streams.settings import Settings
from tests.unit.projections.ledger_builder import LedgerBuilder

Fact = tuple[str, dict[str, Any]]


def lifecycles(jobs: int, rate: float) -> list[Fact]:
    b = LedgerBuilder()
    b.node("n1", cpus=100_000)
    gap = int(1000 / rate)
    for i in range(jobs):
        job = b.queued(name="soak", command=["sleep", "10"], workdir="/home/alice/work")
        b.pending(job, "Priority")
        run = b.started(job, ["n1"])
        b.advance(gap)
        b.ended(job, run)
        b.cycle(i, i)
    return b.facts


def measure(facts: list[Fact], fold: Callable[[list[Fact]], None]) -> list[float]:
    """Heap (MiB) the fold holds after each third of the facts."""
    thirds = [facts[i * len(facts) // 3:(i + 1) * len(facts) // 3] for i in range(3)]
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    marks = []
    for part in thirds:
        for start in range(0, len(part), 50):  # batches, as the ledger consumer gets them
            fold(part[start:start + 50])
        gc.collect()
        marks.append((tracemalloc.get_traced_memory()[0] - base) / 2**20)
    tracemalloc.stop()
    return marks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=6000)
    parser.add_argument("--rate", type=float, default=2.0)
    args = parser.parse_args()
    print(machine_line(), f"load {os.getloadavg()[0]:.2f}", flush=True)
    facts = lifecycles(args.jobs, args.rate)

    views = Views()
    metrics = FactMetrics(views)

    def plain(batch: list[Fact]) -> None:
        for name, record in batch:
            if views.apply(name, record) is not None:
                for n, r in views.applied:
                    metrics.on_fact(n, r, 0)

    with tempfile.TemporaryDirectory(prefix="views-memory-") as home:
        service = ProjectionService(Settings(home=Path(home)))
        service.listeners.append(FactMetrics(service.views).on_fact)
        results = {"everything in memory (before)": measure(facts, plain),
                   f"MinJobAge {service.settings.min_job_age_s} s (now)":
                       measure(facts, lambda batch: service.fold([(n, r, 0) for n, r in batch]))}
        held = len(service.views.jobs)
        service.store.close()
    per_third = args.jobs / 3
    for label, marks in results.items():
        slope = (marks[2] - marks[0]) * 2**20 / (2 * per_third)
        print(f"{label}: heap after each third of {args.jobs} jobs "
              f"{', '.join(f'{m:.2f}' for m in marks)} MiB; {slope:.0f} bytes per job")
    print(f"jobs held in memory at the end: {len(views.jobs)} before, {held} now")
    return 0


if __name__ == "__main__":
    sys.exit(main())
