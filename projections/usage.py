"""``GET /v1/usage?start=MS&end=MS``: what sreport's reports are computed from.

Two lists, read under the views' lock (the job rows from the store, a few hundred at a time,
letting folds in between, as ``/v1/history``):

- ``runs``: every run that overlaps ``[start, end)``: its job's id (``array_job_id`` too for an
  array's task), user, account and partition, its start and end (``end_ms`` 0 while it runs),
  its nodes, ``alloc`` (node → CPUs, when known) and ``cpus``, the CPUs it held: each run's
  own (``JobStarted``'s ``alloc_cpus``, kept in the run since sreport came). The views keep
  the per-node allocation of a job's last run only, and a run folded before runs kept their
  CPUs has them from it when it is the last, else from the CPUs the job asks on each node
  (``JobQueued``'s ``cpus_per_node``) times its nodes (short of the whole nodes an
  ``--exclusive`` job's run held), else from its tasks' CPUs.
  A run without an end that is no longer its job's current one (the ledger never ended it) ends
  where the next run starts, or at the job's end;
- ``nodes``: each node's name, CPUs and ``timeline`` (``projections.node_rows``: the service
  states it went through, with their times; a row folded before timelines were kept shows it
  in service from its registration to its last state change, then in its current state, until
  ``sluice projections --rebuild`` folds the ledger again).

Only what sacct shows already (no command, directory or output path): every reader gets the
whole answer, as Slurm's ``PrivateData`` defaults show everyone's usage (docs/slurm-compat.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from projections.views import ACTIVE_STATES

__all__ = ["run_cpus", "timeline", "usage", "usage_runs"]

Row = Mapping[str, Any]


def usage(views: Any, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """The answer of ``/v1/usage`` (a missing or unreadable bound is open)."""
    start, end = _bound(query, "start", 0), _bound(query, "end", 2**62)
    runs = list(usage_runs(views.every_job(pausing=True), start, end))
    nodes = [{"name": name, "cpus": int(row.get("cpus", 0)), "timeline": timeline(row)}
             for name, row in sorted(views.nodes.items())]
    return {"runs": runs, "nodes": nodes, "start_ms": start, "end_ms": end}


def timeline(row: Row) -> list[list[Any]]:
    """The node's ``timeline``; a row folded before timelines were kept gets one from what it
    knows: in service from its registration, then its current state from its last change."""
    if row.get("timeline"):
        return list(row["timeline"])
    cpus, service = int(row.get("cpus", 0)), str(row.get("service", "UNKNOWN"))
    registered, changed = int(row.get("registered_ms") or 0), int(row.get("state_ms") or 0)
    if changed > registered:
        return [[registered, "IDLE", cpus], [changed, service, cpus]]
    return [[registered, service, cpus]]


def _bound(query: Mapping[str, list[str]], key: str, default: int) -> int:
    text = (query.get(key) or [""])[0]
    return int(text) if text.isdigit() and len(text) < 19 else default


def usage_runs(jobs: Iterable[Row], start: int, end: int) -> Iterator[dict[str, Any]]:
    """The runs of ``jobs`` that overlap ``[start, end)``, as ``/v1/usage`` lists them."""
    for job in jobs:
        runs = job.get("runs") or []
        for index, run in enumerate(runs):
            began = int(run.get("start_ms") or 0)
            if not began or began >= end:
                continue
            ended = _end(job, runs, index)
            if ended and ended <= start:
                continue
            last = index == len(runs) - 1
            row = {
                "job_id": job.get("job_id") or 0,
                "user": str(job.get("user", "")), "account": str(job.get("account", "")),
                "partition": str(job.get("partition", "")),
                "start_ms": began, "end_ms": ended, "nodes": list(run.get("nodes") or ()),
                "cpus": run_cpus(job, run, last=last),
            }
            alloc = _alloc(job, run, last=last)
            if alloc:
                row["alloc"] = alloc
            if job.get("array_job_id"):
                row["array_job_id"] = job["array_job_id"]
            yield row


def _end(job: Row, runs: list[Row], index: int) -> int:
    """When run ``index`` ended; 0 while it runs."""
    ended = int(runs[index].get("end_ms") or 0)
    if ended:
        return ended
    if index + 1 < len(runs):
        return int(runs[index + 1].get("start_ms") or 0)
    current = runs[index].get("run_sluid") == job.get("run_sluid")
    if current and (job.get("state") in ACTIVE_STATES):
        return 0
    return int(job.get("end_ms") or 0)


def _alloc(job: Row, run: Row, *, last: bool) -> dict[str, int]:
    """Node → CPUs of the job's last run (the views keep only that run's allocation)."""
    alloc = job.get("alloc") or {}
    if not last or sorted(alloc) != sorted(run.get("nodes") or ()):
        return {}
    return {name: int(share[0]) for name, share in alloc.items()}


def run_cpus(job: Row, run: Row, *, last: bool) -> int:
    """The CPUs ``run`` held (see the module docstring)."""
    if run.get("cpus"):
        return int(run["cpus"])
    alloc = _alloc(job, run, last=last)
    if alloc:
        return sum(alloc.values())
    per_node, nodes = int(job.get("cpus_per_node") or 0), len(run.get("nodes") or ())
    if per_node and nodes:
        return per_node * nodes
    return int(job.get("cpus_per_task") or 1) * int(job.get("ntasks") or 1)
