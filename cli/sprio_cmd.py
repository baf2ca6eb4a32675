"""``sluice sprio`` (sprio): the priority factors of the pending jobs, as the shards compute them.

Asks every shard once (``Client.plan_priorities``: a ``PlanPriorities``, each shard answering
with a ``PrioritiesComputed`` computed by its scheduling pass's own code at the decision time;
a shard reuses its answer for 10 s) and prints sprio's columns: ``JOBID PARTITION PRIORITY
SITE`` and one column per factor whose weight is set (``AGE FAIRSHARE JOBSIZE PARTITION QOS``,
the weighted values, rounded), jobs by job id. ``-l`` adds ``USER ACCOUNT`` and ``NICE``; ``-u``
filters by user (and shows ``USER``), ``-j`` by job id, ``-p`` by partition; ``-w`` prints the
weights alone; ``-h`` drops the header.

Where Sluice differs: Slurm's ``ASSOC`` and ``TRES`` factors do not exist here (no columns);
``SITE`` is always 0 (no site factor); a job whose priority an operator set
(``scontrol update Priority=``) shows that priority, its factors what the formula would give.
The jobs listed are those sprio lists: pending, eligible (begin time reached), not held; at most
1,000 per shard, in queue order.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cli.client import ApiError, Client
from streams.settings import Settings

__all__ = ["add_parsers", "sprio_lines"]

WAIT_S = 10.0
"""How long sprio waits for every shard's answer."""
_FACTOR_COLUMNS = (("age", "AGE", "age"), ("fairshare", "FAIRSHARE", "fairshare"),
                   ("jobsize", "JOBSIZE", "jobsize"),
                   ("partition", "PARTITION", "partition_factor"), ("qos", "QOS", "qos"))
"""(weight name, sprio's column, the answer row's key)."""


def add_parsers(sub: Any) -> None:
    """Register sprio."""
    p = sub.add_parser("sprio", help="priority factors of pending jobs (like sprio)",
                       add_help=False)
    p.add_argument("--help", action="help", help="show this help and exit")
    p.add_argument("-j", "--jobs", default="", help="these job ids (comma separated)")
    p.add_argument("-u", "--user", default="", help="these users' jobs (comma separated)")
    p.add_argument("-p", "--partition", default="", help="these partitions' jobs")
    p.add_argument("-l", "--long", action="store_true", help="also USER, ACCOUNT, NICE")
    p.add_argument("-w", "--weights", action="store_true", help="the weights alone")
    p.add_argument("-h", "--noheader", action="store_true", help="no header line")
    p.set_defaults(run=_sprio)


def _row(values: list[str], widths: list[int], left: set[int]) -> str:
    cells = [v[:w].ljust(w) if i in left else v[:w].rjust(w)
             for i, (v, w) in enumerate(zip(values, widths, strict=True))]
    return " ".join(cells).rstrip()


def sprio_lines(jobs: list[dict[str, Any]], weights: dict[str, int], *, long: bool = False,
                users: bool = False, weights_only: bool = False,
                header: bool = True) -> list[str]:
    """sprio's table: one line per job (rows carry the answer's fields and the views' ``user``,
    ``account``, ``partition``), factor columns only for the weights set."""
    factors = [(key, title, row) for key, title, row in _FACTOR_COLUMNS if weights.get(key)]
    titles = ["JOBID", "PARTITION"]
    if long or users:
        titles += ["USER"]
    if long:
        titles += ["ACCOUNT"]
    titles += ["PRIORITY", "SITE", *(t for _, t, _ in factors)]
    if long:
        titles += ["NICE"]
    widths = [15, 9] + [8] * ((long or users) + long) + [10] * (2 + len(factors)) + \
        [11] * long
    left = {1} | ({2, 3} if long else {2} if users else set())
    lines = [_row(titles, widths, left)] if header else []
    if weights_only:
        values = ["Weights", "", *([""] * ((long or users) + long)), "", "",
                  *(str(weights[k]) for k, _, _ in factors), *([""] * long)]
        return [*lines, _row(values, widths, left)]
    for job in jobs:
        values = [str(job["job_id"]), str(job.get("partition", ""))]
        if long or users:
            values.append(str(job.get("user", "")))
        if long:
            values.append(str(job.get("account", "")))
        values += [str(job["priority"]), "0", *(str(job[r]) for _, _, r in factors)]
        if long:
            values.append(str(job["nice"]))
        lines.append(_row(values, widths, left))
    return lines


def _sprio(args: argparse.Namespace, settings: Settings) -> int:
    client = Client(settings)
    try:
        answer = client.plan_priorities(WAIT_S)
    except (ApiError, ValueError) as exc:
        print(f"sprio: error: Couldn't get priority factors from controller: {exc}",
              file=sys.stderr)
        return 1
    if answer is None or "denial" in answer:
        why = (f"{answer['denial'].get('reason', '')}: {answer['denial'].get('detail', '')}"
               if answer else f"no shard answered within {WAIT_S:g} s")
        print(f"sprio: error: Couldn't get priority factors from controller: {why}",
              file=sys.stderr)
        return 1
    found = answer.get("priorities") or {}
    if not found.get("complete", False):
        print(f"sprio: not every shard answered within {WAIT_S:g} s (answered: "
              f"{', '.join(sorted(found.get('shards') or {})) or 'none'})", file=sys.stderr)
    weights: dict[str, int] = {}
    jobs: list[dict[str, Any]] = []
    for shard, part in sorted((found.get("shards") or {}).items()):
        weights = weights or {k: int(v) for k, v in (part.get("weights") or {}).items()}
        if part.get("missing"):
            print(f"sprio: the views no longer hold the answer shard {shard} reused; try again "
                  "in 10 s", file=sys.stderr)
        jobs += [dict(j) for j in part.get("jobs", [])]
    rows = {str(r["job_sluid"]): r for r in client.get("/v1/jobs?state=PENDING")["jobs"]} \
        if jobs else {}
    for job in jobs:
        row = rows.get(str(job["job_sluid"]), {})
        job.update(user=row.get("user", ""), account=row.get("account", ""),
                   partition=row.get("partition", ""))
    jobs = [j for j in jobs if _wanted(j, args)]
    if args.jobs and not jobs and not args.weights:
        print("Unable to find jobs matching user/id(s) specified")
        return 0
    jobs.sort(key=lambda j: int(j["job_id"]))
    print("\n".join(sprio_lines(jobs, weights, long=args.long, users=bool(args.user),
                                weights_only=args.weights, header=not args.noheader)))
    return 0


def _wanted(job: dict[str, Any], args: argparse.Namespace) -> bool:
    return ((not args.jobs or str(job["job_id"]) in args.jobs.split(","))
            and (not args.user or job.get("user") in args.user.split(","))
            and (not args.partition or job.get("partition") in args.partition.split(",")))
