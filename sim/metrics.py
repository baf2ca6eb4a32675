"""The standard metrics of scheduling studies, from each job's submit, start and end.

- wait = start - submit; average over the jobs that ran;
- bounded slowdown = max(1, (wait + run) / max(run, 10 s)) (Feitelson's 10-second bound);
- utilization = Σ(CPUs * run) / (machine CPUs * makespan);
- makespan = last end - first submit.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BOUND_S", "JobTimes", "Summary", "summarise"]

BOUND_S = 10.0


@dataclass(slots=True)
class JobTimes:
    """One job's times in ms (-1 = not yet) and its size."""

    submit_ms: int
    run_s: int
    width: int
    start_ms: int = -1
    end_ms: int = -1
    cpus: int = 1
    gpus: int = 0


@dataclass(frozen=True, slots=True)
class Summary:
    """The averages over a run."""

    avg_wait_s: float
    avg_bounded_slowdown: float
    utilization: float
    makespan_s: float
    gpu_work: float = 0.0


def summarise(jobs: list[JobTimes], machine_cpus: int, node_cpus: list[int]) -> Summary:
    """Average wait, bounded slowdown, utilization and makespan of finished jobs."""
    del node_cpus
    if not jobs:
        return Summary(0.0, 0.0, 0.0, 0.0)
    waits = [(j.start_ms - j.submit_ms) / 1000 for j in jobs]
    runs = [(j.end_ms - j.start_ms) / 1000 for j in jobs]
    slowdowns = [max(1.0, (w + r) / max(r, BOUND_S)) for w, r in zip(waits, runs, strict=True)]
    first = min(j.submit_ms for j in jobs)
    last = max(j.end_ms for j in jobs)
    makespan = (last - first) / 1000
    work = sum(j.width * j.cpus * r for j, r in zip(jobs, runs, strict=True))
    utilization = work / (machine_cpus * makespan) if makespan > 0 and machine_cpus else 0.0
    gpu_work = sum(j.width * j.gpus * r for j, r in zip(jobs, runs, strict=True))
    return Summary(
        sum(waits) / len(jobs), sum(slowdowns) / len(jobs), utilization, makespan, gpu_work
    )
