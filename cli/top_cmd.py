"""``scontrol top JOB_LIST``: Slurm's move of jobs to the top of their owner's pending jobs.

As Slurm's ``job_set_top`` (``_set_top``): the first job named sets the user, partition,
account and QOS; the jobs named that match it, and the owner's other pending jobs that match it
(not held, one partition, priority above 1), share out their current priorities again, highest
first: the named jobs take the highest in the order named, the others the rest in their
priority order, each a step below the one before on a tie (never below 1). Each job's nice
changes by what its priority changed (``nice -= new - old``), so the order holds as the factors
grow alike; the owner's sum of priorities stays. The priorities are the shards' (``sprio``'s,
:meth:`cli.client.Client.plan_priorities`); the nice values are sent as ``scontrol update
JobId=N Nice=M``, an operator's (a nice below 0 is an operator's only).

Who may: an operator or administrator of the configuration in force, or root (Slurm's default;
Slurm's ``SchedulerParameters=enable_user_top``, which lets users top their own jobs, is not
taken). A listed job that is not pending is ``Job is no longer pending execution``, one of
``-p a,b`` ``Requested partition configuration not available now``, a held one ``Job is in held
state, pending scheduler release``, each after ``slurm_top_job error:`` as scontrol prints them,
exit 1, nothing changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

__all__ = ["Ranked", "top", "top_nices"]

WAIT_S = 10.0


@dataclass(frozen=True, slots=True)
class Ranked:
    """One pending job as ``top`` sees it."""

    ref: str  # its job id (as scontrol update takes it)
    priority: int
    nice: int


def top_nices(named: list[Ranked], others: list[Ranked]) -> dict[str, int]:
    """The new nice of each job whose priority ``_set_top`` changes (Slurm's algorithm):
    ``named`` take the highest of all the priorities in their order, ``others`` (any order)
    the rest by priority; a tie steps one below the job before, down to 2."""
    prios = sorted((r.priority for r in (*named, *others)), reverse=True)
    ranked = [*named, *sorted(others, key=lambda r: -r.priority)]
    nices: dict[str, int] = {}
    last: int | None = None
    for job, share in zip(ranked, prios, strict=True):
        wanted = last - 1 if last is not None and share >= last > 2 else share
        last = wanted
        if wanted != job.priority:
            nices[job.ref] = job.nice - (wanted - job.priority)
    return nices


def top(words: list[str], settings: Any, quiet: bool) -> int:
    """Run ``scontrol top JOB_LIST`` (see the module docstring)."""
    from cli.client import ApiError, Client
    from cli.submit import real_user

    ids = [i for word in words for i in word.split(",") if i]
    if not ids:
        return _error("Invalid job id specified", quiet)
    client = Client(settings)
    try:
        cluster = client.get("/v1/config")["config"].get("cluster", {})
        if os.getuid() != 0 and real_user() not in (cluster.get("privileged") or ()):
            return _error("Access/permission denied", quiet)
        rows = client.get("/v1/jobs?state=PENDING")["jobs"]
        answer = client.plan_priorities(WAIT_S)
    except (ApiError, ValueError) as exc:
        return _error(f"Unable to contact slurm controller ({exc})", quiet)
    shards = ((answer or {}).get("priorities") or {}).get("shards") or {}
    ranks = {str(j["job_id"]): j for part in shards.values() for j in part.get("jobs", [])}
    by_id = {str(r.get("job_id")): r for r in rows}
    named: list[Ranked] = []
    first: dict[str, Any] | None = None
    for ref in ids:
        row = by_id.get(ref)
        if row is None:
            known = _known(client, ref)
            return _error("Job is no longer pending execution" if known
                          else "Invalid job id specified", quiet)
        if "," in str(row.get("partition", "")):
            return _error("Requested partition configuration not available now", quiet)
        if str(row.get("reason", "")).startswith("JobHeld"):
            return _error("Job is in held state, pending scheduler release", quiet)
        first = first or row
        if _key(row) == _key(first) and ref in ranks:  # (sprio's: not before its begin time)
            named.append(_ranked(ref, ranks[ref]))
    if first is None:
        return 0
    others = [_ranked(ref, ranks[ref]) for ref, row in by_id.items()
              if ref in ranks and ref not in ids and _key(row) == _key(first)
              and "," not in str(row.get("partition", ""))
              and not ranks[ref].get("admin_priority") and int(ranks[ref]["priority"]) > 1]
    status = 0
    for ref, nice in top_nices(named, others).items():
        from cli.slurm_cmds import _sluice

        status |= _sluice(["update", "job", ref, f"Nice={nice}"])
    return 1 if status else 0


def _key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (str(row.get("user", "")), str(row.get("partition", "")),
            str(row.get("account", "")), str(row.get("qos", "")))


def _ranked(ref: str, rank: dict[str, Any]) -> Ranked:
    return Ranked(ref, int(rank["priority"]), int(rank.get("nice") or 0))


def _known(client: Any, ref: str) -> bool:
    from cli.client import ApiError

    try:
        client.job(ref)
    except (ApiError, ValueError):
        return False
    return True


def _error(words: str, quiet: bool) -> int:
    import sys

    if not quiet:
        print(f"slurm_top_job error: {words}", file=sys.stderr)
    return 1
