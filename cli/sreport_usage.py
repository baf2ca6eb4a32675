"""sreport's numbers, computed from ``GET /v1/usage`` (``projections.usage``): pure functions.

Every amount is CPU-milliseconds inside the window ``[start, end)`` (the CLI prints seconds,
minutes, hours or percentages of them):

- a run's CPU time is its CPUs times the part of ``[start, end)`` it ran in; a run still going
  counts up to ``now``;
- a node reports its CPUs for the part of the window after its first registration, up to
  ``now``; a spell out of service (DOWN, DRAIN, an unknown state) is **down**, less the CPUs
  runs held on it then (those are **allocated**, as slurmctld leaves a draining node's jobs
  running); **idle** is what is left, and any allocated time beyond what the nodes reported
  (a node's timeline forgotten, a run on a node the views never saw) is **overcommitted**,
  as Slurm's ``Over Comm``;
- Slurm's **planned** (time eligible jobs waited for resources) and **planned down** (nodes in
  maintenance reservations) are not recorded by Sluice: always 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "IN_SERVICE", "Utilization", "association_usage", "cluster_utilization", "overlap",
    "run_usage", "size_usage",
]

IN_SERVICE = frozenset({"IDLE", "MIXED", "ALLOCATED"})
"""The node service states that count as up (the rest are down)."""

Run = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Utilization:
    """``sreport cluster utilization``'s amounts (CPU-ms) and the average CPU count."""

    allocated: int = 0
    down: int = 0
    planned_down: int = 0
    idle: int = 0
    planned: int = 0
    overcommitted: int = 0
    reported: int = 0
    cpu_count: int = 0


def overlap(begin: int, finish: int, start: int, end: int) -> int:
    """How many ms of ``[begin, finish)`` fall in ``[start, end)`` (0 when none)."""
    return max(0, min(finish, end) - max(begin, start))


def _finish(run: Run, now: int) -> int:
    return int(run.get("end_ms") or 0) or now


def run_usage(run: Run, start: int, end: int, now: int) -> int:
    """The CPU-ms of ``run`` in ``[start, end)`` (a run without an end runs until ``now``)."""
    return int(run.get("cpus", 0)) * overlap(int(run["start_ms"]), _finish(run, now), start, end)


def association_usage(runs: Iterable[Run], start: int, end: int, now: int
                      ) -> dict[tuple[str, str], int]:
    """CPU-ms by ``(account, user)``."""
    used: dict[tuple[str, str], int] = defaultdict(int)
    for run in runs:
        amount = run_usage(run, start, end, now)
        if amount:
            used[str(run.get("account", "")), str(run.get("user", ""))] += amount
    return dict(used)


def _spells(node: Mapping[str, Any], start: int, end: int
            ) -> list[tuple[int, int, str, int]]:
    """The node's ``(begin, finish, service, cpus)`` spells clipped to ``[start, end)``."""
    timeline = sorted((list(e) for e in node.get("timeline") or ()), key=lambda e: e[0])
    spells = []
    for index, (at, service, cpus) in enumerate(timeline):
        until = timeline[index + 1][0] if index + 1 < len(timeline) else end
        begin, finish = max(int(at), start), min(int(until), end)
        if finish > begin:
            spells.append((begin, finish, str(service), int(cpus)))
    return spells


def cluster_utilization(runs: Sequence[Run], nodes: Iterable[Mapping[str, Any]], start: int,
                        end: int, now: int) -> Utilization:
    """``sreport cluster utilization`` over ``[start, end)`` (see the module docstring)."""
    until = min(end, now)
    allocated = sum(run_usage(run, start, end, now) for run in runs)
    reported = down = 0
    held = _held_by_node(runs)
    for node in nodes:
        for begin, finish, service, cpus in _spells(node, start, until):
            reported += cpus * (finish - begin)
            if service not in IN_SERVICE:
                busy = sum(share * overlap(b, f, begin, finish)
                           for b, f, share in held.get(str(node.get("name")), ()))
                down += max(0, cpus * (finish - begin) - busy)
    idle = reported - allocated - down
    over = max(0, -idle)
    window = max(1, until - start)
    return Utilization(allocated=allocated, down=down, idle=max(0, idle), overcommitted=over,
                       reported=reported, cpu_count=round(reported / window))


def _held_by_node(runs: Sequence[Run]) -> dict[str, list[tuple[int, int, int]]]:
    """Node → ``(start, end, CPUs)`` of the runs on it (a run's CPUs shared evenly among its
    nodes unless ``alloc`` names each node's; end 2**62 while it runs)."""
    held: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for run in runs:
        names = list(run.get("nodes") or ())
        alloc = run.get("alloc") or {}
        finish = int(run.get("end_ms") or 0) or 2**62
        for name in names:
            share = int(alloc[name]) if name in alloc else int(run.get("cpus", 0)) // len(names)
            held[name].append((int(run["start_ms"]), finish, share))
    return held


def size_usage(runs: Iterable[Run], start: int, end: int, now: int, bounds: Sequence[int],
               top_of: Mapping[str, str]) -> dict[str, tuple[list[int], list[int]]]:
    """``sreport job sizesbyaccount``: for each top account (``top_of`` maps an account to the
    one shown; others show as themselves), the CPU-ms and the number of jobs in each size
    bucket. ``bounds`` are the grouping's lower bounds after the first bucket (Slurm's
    ``50,250,500,1000``: 0-49, 50-249, 250-499, 500-999, >= 1000 CPUs). Each run is a job here,
    as each run of a requeued job is a record of its own in Slurm's database (sacct -D)."""
    result: dict[str, tuple[list[int], list[int]]] = {}
    for run in runs:
        amount = run_usage(run, start, end, now)
        if not amount:
            continue
        account = str(run.get("account", ""))
        times, counts = result.setdefault(top_of.get(account, account),
                                          ([0] * (len(bounds) + 1), [0] * (len(bounds) + 1)))
        bucket = sum(1 for bound in bounds if int(run.get("cpus", 0)) >= bound)
        times[bucket] += amount
        counts[bucket] += 1
    return result
