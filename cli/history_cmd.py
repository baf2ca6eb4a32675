"""``sluice history`` as sacct prints it: ``--format``/``-o``, ``-X``, ``-S``/``-E``, ``-s``,
``-P``/``-p``, ``-n``/``--noheader``, ``-D``, ``-j``, ``-u``/``-a``.

As sacct: the caller's jobs unless ``-u`` or ``-a``; jobs active in the window from ``-S``
(default: today's midnight, unless ``-j`` is given) to ``-E`` (default: now); one line per
job, its last run (``-D``: every run, requeues included); then its steps (``ID.batch``,
``ID.0``...) when the views have them, unless ``-X``. The default format is sacct's
``JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote

from cli.client import Client
from cli.formats import elapsed, host_list, parse_field_list, render, slurm_time
from cli.job_fields import job_names, job_values, state_filter
from cli.queue_cmd import array_bases, matches_state
from cli.sacct_fields import EXTRA_FIELDS, add_derived
from cli.slurm_units import parse_begin
from cli.submit import real_user
from streams.settings import Settings

__all__ = ["SACCT_FIELDS", "add_history_parser", "history_rows", "only_steps", "steps_named"]

DEFAULT_FORMAT = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
# lower-case name → (key, header, width, right-justified)
SACCT_FIELDS: dict[str, tuple[str, str, int, bool]] = {
    "jobid": ("job_id", "JobID", 12, False), "jobidraw": ("job_id_raw", "JobIDRaw", 12, False),
    "jobname": ("name", "JobName", 10, True), "partition": ("partition", "Partition", 10, True),
    "account": ("account", "Account", 10, True), "user": ("user", "User", 9, True),
    "alloccpus": ("alloc_cpus", "AllocCPUS", 10, True), "reqcpus": ("cpus", "ReqCPUS", 8, True),
    "state": ("state", "State", 10, True), "exitcode": ("exit_code", "ExitCode", 8, True),
    "elapsed": ("elapsed", "Elapsed", 10, True),
    "elapsedraw": ("elapsed_raw", "ElapsedRaw", 10, True),
    "start": ("start", "Start", 19, True), "end": ("end", "End", 19, True),
    "submit": ("submit", "Submit", 19, True), "nodelist": ("nodelist", "NodeList", 15, True),
    "nnodes": ("nnodes", "NNodes", 8, True), "ntasks": ("ntasks", "NTasks", 8, True),
    "timelimit": ("timelimit", "Timelimit", 10, True),
    "qos": ("qos", "QOS", 10, True), "reqmem": ("req_mem", "ReqMem", 10, True),
    "reason": ("reason", "Reason", 20, True), "comment": ("comment", "Comment", 15, True),
    "admincomment": ("admin_comment", "AdminComment", 15, True),
    "extra": ("extra", "Extra", 15, True),
    "workdir": ("workdir", "WorkDir", 30, True), "priority": ("priority", "Priority", 10, True),
    "constraints": ("features", "Constraints", 19, True),
    "dependency": ("dependency", "Dependency", 20, True),
    "reservation": ("sacct_reservation", "Reservation", 10, True),
    **EXTRA_FIELDS,  # derived from the above, or not collected (cli/sacct_fields.py)
}


def add_history_parser(sub: Any) -> None:
    """Register ``history``."""
    h = sub.add_parser("history", help="jobs and their runs (like sacct)")
    h.add_argument("-u", "--user", default="",
                   help="comma list of users (default: you; everyone for root or with -j)")
    h.add_argument("-a", "--allusers", action="store_true")
    h.add_argument("-j", "--jobs", default="", help="comma-separated ids or SLUIDs")
    h.add_argument("-o", "--format", default=DEFAULT_FORMAT,
                   help="fields, e.g. JobID,State,Elapsed,JobName%%30")
    h.add_argument("-X", "--allocations", action="store_true", help="no steps")
    h.add_argument("-D", "--duplicates", action="store_true", help="every run of a requeued job")
    h.add_argument("-S", "--starttime", default="", help="window start (default: midnight)")
    h.add_argument("-E", "--endtime", default="", help="window end (default: now)")
    h.add_argument("-s", "--state", default="", help="e.g. CD,F,CA or COMPLETED,FAILED")
    h.add_argument("-P", "--parsable2", action="store_true", help="'|'-separated")
    h.add_argument("-p", "--parsable", action="store_true", help="'|'-separated, trailing '|'")
    h.add_argument("-n", "--noheader", action="store_true")
    h.add_argument("-b", "--brief", action="store_true", help="-o JobID,State,ExitCode")
    h.add_argument("-l", "--long", action="store_true",
                   help="sacct's long format (the fields it has; -o is ignored)")
    h.add_argument("-e", "--helpformat", action="store_true", help="the fields -o takes")
    h.add_argument("--name", default="", help="only jobs of these names (comma list)")
    h.add_argument("-r", "--partition", default="", help="only jobs of these partitions")
    h.add_argument("-A", "--accounts", default="", help="only jobs of these accounts")
    h.add_argument("-L", "--allclusters", action="store_true",
                   help="accepted: Sluice is one cluster")
    h.add_argument("--json", action="store_true")
    h.set_defaults(run=run_history)


BRIEF_FORMAT = "JobID,State,ExitCode"
"""sacct's ``-b/--brief`` fields."""
LONG_FORMAT = ",".join(
    name for name in (
        "JobID", "JobIDRaw", "JobName", "Partition", "MaxVMSize", "MaxVMSizeNode",
        "MaxVMSizeTask", "AveVMSize", "MaxRSS", "MaxRSSNode", "MaxRSSTask", "AveRSS", "MaxPages",
        "AvePages", "MinCPU", "AveCPU", "NTasks", "AllocCPUS", "Elapsed", "State", "ExitCode",
        "AveCPUFreq", "ReqMem", "ConsumedEnergy", "MaxDiskRead", "AveDiskRead", "MaxDiskWrite",
        "AveDiskWrite", "ReqTRES", "AllocTRES", "TRESUsageInTot", "TRESUsageOutTot")
)
"""sacct's ``-l/--long`` fields (``LONG_FIELDS``), those of them Sluice knows, in its order."""


def _format(args: argparse.Namespace) -> str:
    """The ``-o`` fields, or ``-b``'s or ``-l``'s (``-l`` wins, as sacct's last word)."""
    return LONG_FORMAT if args.long else BRIEF_FORMAT if args.brief else args.format


def _in_lists(job: Mapping[str, Any], args: argparse.Namespace) -> bool:
    """The job is of the ``--name``, ``-r`` and ``-A`` lists given."""
    for key, given in (("name", args.name), ("partition", args.partition),
                       ("account", args.accounts)):
        wanted = {w for w in given.split(",") if w}
        if wanted and str(job.get(key, "")) not in wanted:
            return False
    return True


def run_history(args: argparse.Namespace, settings: Settings) -> int:
    if args.helpformat:  # sacct -e: the field names, several a line
        names = sorted({header for _, header, _, _ in SACCT_FIELDS.values()}, key=str.lower)
        for first in range(0, len(names), 5):
            print("".join(f"{name:<20}" for name in names[first:first + 5]).rstrip())
        return 0
    try:
        columns = parse_field_list(_format(args), SACCT_FIELDS, "--format", "%")
        wanted = state_filter(args.state, "-s") if args.state else None
        now = datetime.now().astimezone()
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        start = parse_begin(args.starttime, now, past=True) if args.starttime else (
            0 if args.jobs else int(midnight.timestamp() * 1000))
        end = (parse_begin(args.endtime, now, past=True) if args.endtime
               else int(now.timestamp() * 1000))
    except ValueError as error:
        print(f"sluice history: {error}", file=sys.stderr)
        return 2
    bad = next((j for j in args.jobs.split(",") if j and not j[0].isdigit() and j[0] != "s"),
               "")
    if bad:  # sacct's own check (_addto_step_list_internal), before asking anything
        print(f"sluice history: fatal: Bad job/step specified: {bad}", file=sys.stderr)
        return 1
    if start > end and (args.endtime or not args.state):  # sacct: -s alone sets -E to -S
        print(f"sluice history: error: Start time ({slurm_time(start)}) requested is after "
              f"end time ({slurm_time(end)}).", file=sys.stderr)
        return 1
    user = history_user(args.allusers, args.user, args.jobs, os.getuid(), real_user())
    client = Client(settings)
    answer = client.get("/v1/jobs?all=1" + (f"&user={quote(user, safe='')}" if user else ""))
    selectors = [j.partition(".") for j in args.jobs.split(",") if j]
    ids = {job for job, _, _ in selectors}
    bases = array_bases(client, answer["jobs"]) if ids else {}
    jobs = [
        j for j in answer["jobs"]
        if j.get("job_id")  # a refused submission never got an id: sacct never lists it
        and (not ids or bool(job_names(j, bases) & ids))
        and matches_state(j, wanted) and _in_window(j, start, end) and _in_lists(j, args)
    ]
    if args.json:
        print(json.dumps({"jobs": jobs}, indent=2))
        return 0
    now_ms = int(time.time() * 1000)
    bases = bases or array_bases(client, jobs)
    rows = [row for job in jobs
            for row in only_steps(history_rows([job], now_ms, bases, args.duplicates,
                                               not args.allocations),
                                  steps_named(selectors, job_names(job, bases)))]
    for row in rows:
        add_derived(row, settings.cluster)
    parsable = args.parsable or args.parsable2
    layout: list[Any] = []
    for column in columns:  # sacct: one space between fields (and after the last)
        layout += [" ", column] if layout else [column]
    for line in render(rows, layout, header=not args.noheader,
                       delimiter="|" if parsable else None, trailing=args.parsable,
                       cut_mark="+", dashes=True, end=" "):
        print(line)
    return 0


def history_user(allusers: bool, users: str, jobs: str, uid: int, me: str) -> str:
    """The users whose jobs are listed ("" = every user), as sacct chooses them: ``-a``,
    or no ``-u`` from root or with ``-j`` (a job named is shown whoever owns it): every
    user; else the ``-u`` users, else the caller (``me``)."""
    if allusers or (not users and (uid == 0 or jobs)):
        return ""
    return users or me


def steps_named(selectors: list[tuple[str, str, str]], names: set[str]) -> set[str] | None:
    """The steps ``-j`` asks of a job called ``names`` (``ID.0``, ``ID.batch``), or None when
    some selector names the whole job (``ID``), or no selector names it (no ``-j``)."""
    steps: set[str] = set()
    for job, dot, step in selectors:
        if job in names:
            if not dot:
                return None
            steps.add(step)
    return steps or None


def only_steps(rows: list[dict[str, str]], steps: set[str] | None) -> list[dict[str, str]]:
    """A job's sacct lines, only those of ``steps`` when given (``sacct -j 7.0`` prints the
    line of step 0 alone, as sacct does)."""
    if steps is None:
        return rows
    return [row for row in rows
            if row["job_id"].rpartition(".")[1] and row["job_id"].rpartition(".")[2] in steps]


def _in_window(job: Mapping[str, Any], start: int, end: int) -> bool:
    """Active at some time in [start, end]: submitted by its end, not ended before its start."""
    return int(job.get("submit_ms", 0)) <= end and (
        not job.get("end_ms") or int(job["end_ms"]) >= start)


def history_rows(jobs: list[dict[str, Any]], now_ms: int, bases: Mapping[str, int],
                 every_run: bool, steps: bool) -> list[dict[str, str]]:
    """sacct's lines for ``jobs``: each job (or each of its runs), then its steps."""
    rows: list[dict[str, str]] = []
    for job in jobs:
        base = job_values(job, now_ms, bases)
        base.update(start=slurm_time(job.get("start_ms", 0), "Unknown"),
                    end=slurm_time(job.get("end_ms", 0), "Unknown"),
                    sacct_reservation=str(job.get("reservation") or ""),  # sacct: empty
                    # sacct prints an empty Comment or Constraints as nothing, not (null)
                    comment=str(job.get("comment") or ""),
                    features=str(job.get("constraint") or ""),
                    eligible=slurm_time(max(int(job.get("begin_ms") or 0),  # --begin's,
                                            int(job.get("submit_ms") or 0)), "Unknown"))
        runs = job.get("runs") or []
        if runs and job.get("run_sluid", runs[-1].get("run_sluid")) != runs[-1].get("run_sluid"):
            runs = [*runs, _between_runs(job)]  # requeued: its newest record has no run yet
        chosen = runs if every_run else runs[-1:]
        if not chosen:
            rows.append({**base, "alloc_cpus": "0", "nodelist": "None assigned",
                         "derived_exit_code": "0:0"})
        for run in chosen:
            rows.append({**base, **_run_values(job, run, now_ms),
                         "derived_exit_code": derived_exit_code(_run_steps(job, run))})
            if steps:
                rows.extend(_step_rows(job, run, base, now_ms))
    return rows


def _between_runs(job: Mapping[str, Any]) -> dict[str, Any]:
    """The newest record of a job its runs no longer describe (requeued, then pending or
    cancelled before it ran again), as sacct's newest record of a requeued job: no start."""
    return {"state": job["state"], "exit_code": job.get("exit_code", 0),
            "signal": job.get("signal", 0), "start_ms": 0, "end_ms": job.get("end_ms", 0),
            "nodes": []}


def _run_steps(job: Mapping[str, Any], run: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The srun steps of one run (a step row without a run is the job's only run's); not a
    step that never started (a waiting one, id -1: sacct has no record of it)."""
    return [step for step in job.get("steps", [])
            if step.get("run_sluid", run.get("run_sluid")) == run.get("run_sluid")
            and int(step.get("step_id", 0)) >= 0]


def derived_exit_code(steps: list[Mapping[str, Any]]) -> str:
    """sacct's DerivedExitCode of a job line: the highest exit of the run's srun steps (the
    batch step is not one: Slurm's stepmgr leaves it out), compared as wait statuses (an exit
    code above any signal), ``0:0`` without a step."""
    def status(step: Mapping[str, Any]) -> tuple[int, int]:
        return int(step.get("exit_code") or 0), int(step.get("signal") or 0)

    code, signal = max(map(status, steps), default=(0, 0))
    return f"{code}:{signal}"


def _step_rows(job: Mapping[str, Any], run: Mapping[str, Any], base: dict[str, str],
               now_ms: int) -> list[dict[str, str]]:
    """sacct's step lines of one run: ``ID.batch`` (the batch host), then ``ID.0``, ``ID.1``…"""
    if not run.get("start_ms"):
        return []
    # sacct: a step has no User, Comment or Constraints (print.c: the job's alone)
    step_base = {"partition": "", "timelimit": "", "user": "", "comment": "", "features": ""}
    batch = {**base, **_run_values(job, {**run, "nodes": list(run.get("nodes", []))[:1]}, now_ms),
             **step_base, "job_id": f"{base['job_id']}.batch", "name": "batch", "ntasks": "1"}
    rows = [batch]
    for step in _run_steps(job, run):
        tasks = int(step.get("ntasks") or 1)
        rows.append({**base, **_run_values(job, step, now_ms), **step_base,
                     "job_id": f"{base['job_id']}.{step.get('step_id', '')}",
                     "name": str(step.get("name", "")), "ntasks": str(tasks),
                     "alloc_cpus": str(tasks * int(step.get("cpus_per_task")
                                                   or job.get("cpus_per_task") or 1))})
    for row in rows:  # sacct: a step's Eligible is its start; DerivedExitCode a job's alone
        row.update(eligible=row["start"], derived_exit_code="")
    return rows


def _run_cpus(job: Mapping[str, Any], run: Mapping[str, Any], nodes: list[str]) -> int:
    """The CPUs ``run`` held on ``nodes``: what each node gave it (the job's ``alloc``, for
    its latest run; tasks may spread unevenly, ``-N2 -n5`` holding 4 and 1), else the run's
    total over all its nodes, else the queued per-node share, else the spec's count."""
    alloc = job.get("alloc") or {}
    if nodes and run.get("run_sluid") == job.get("run_sluid") and all(n in alloc for n in nodes):
        return sum(int(alloc[n][0]) for n in nodes)
    if run.get("cpus") and list(run.get("nodes", [])) == nodes:
        return int(run["cpus"])
    per_node = int(job.get("cpus_per_node") or 0)  # what each node gave the run
    return per_node * len(nodes) if per_node and nodes else (
        int(job.get("cpus_per_task") or 1) * int(job.get("ntasks") or 1))


def _run_values(job: Mapping[str, Any], run: Mapping[str, Any], now_ms: int) -> dict[str, str]:
    start, end = int(run.get("start_ms", 0)), int(run.get("end_ms", 0))
    used = ((end or now_ms) - start) // 1000 if start else 0
    nodes = list(run.get("nodes", []))
    cpus = _run_cpus(job, run, nodes)
    return {
        "state": str(run.get("state", job["state"])),
        "exit_code": f"{run.get('exit_code', 0)}:{run.get('signal', 0)}",
        "start": slurm_time(start, "Unknown"), "end": slurm_time(end, "Unknown"),
        "elapsed": elapsed(used), "elapsed_raw": str(used),
        "nodelist": host_list(nodes) if nodes else "None assigned",
        "nnodes": str(len(nodes) or job.get("nodes_min", 1)),
        "alloc_cpus": str(cpus if start else 0),
    }
