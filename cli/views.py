"""``sluice queue`` (squeue), ``sluice nodes`` (sinfo), ``sluice show job`` (scontrol show job)
and ``sluice history`` (sacct), all read from the projections' HTTP API; each prints what its
Slurm command would (``cli.queue_cmd``, ``cli.nodes_cmd``, ``cli.show_cmd``,
``cli.history_cmd``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from urllib.parse import quote

from cli.admin import confirm_down
from cli.client import ApiError, Client, request_subject
from cli.dead_letters_shown import dead_letter_field, dead_letter_lines, dead_letters
from cli.formats import shown, slurm_time
from cli.history_cmd import add_history_parser
from cli.job_fields import job_id_text
from cli.nodes_cmd import add_node_options, mark_reservations, run_nodes
from cli.queue_cmd import add_queue_parser, array_bases
from cli.show_cmd import job_lines, node_lines, now_ms
from schemas.sluid import is_sluid
from streams.settings import Settings

__all__ = ["add_parsers"]


def add_parsers(sub: Any) -> None:
    """Register queue, nodes, show and history."""
    add_queue_parser(sub)
    n = sub.add_parser("nodes", help="nodes by partition and state (like sinfo); "
                       "'sluice nodes confirm-down [NODE...]' takes suspected nodes DOWN",
                       add_help=False)
    n.add_argument("action", nargs="?", choices=["confirm-down"],
                   help="confirm-down: the suspected nodes (all, or those named) go DOWN")
    n.add_argument("names", nargs="*", metavar="NODE")
    add_node_options(n)
    n.add_argument("--json", action="store_true")
    n.set_defaults(run=_nodes)
    s = sub.add_parser("show", help="one object in detail (like scontrol show)")
    s.add_argument("kind", choices=["job", "node"])
    s.add_argument("ref", nargs="?", default=None,
                   help="a job id or SLUID, a node name or host list (default: every one)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--script", action="store_true",
                   help="print the job's batch script (scontrol write batch_script ID -)")
    s.set_defaults(run=_show)
    add_history_parser(sub)


def _get(settings: Settings, path: str) -> dict[str, Any] | None:
    try:
        return Client(settings).get(path)
    except ApiError as exc:
        print(f"sluice: {exc}", file=sys.stderr)
        return None


def _denial_lines(client: Client, sluid: str) -> list[str]:
    """``refused: SubmitJob Unauthenticated at TIME (detail)`` for each request refused under
    ``sluid`` (``RequestDenied``): a submission refused for its credential never became a job,
    and ``show job`` said only ``no job``."""
    if not is_sluid(sluid):
        return []
    try:
        denials = client.get(f"/v1/denials/{quote(sluid, safe='')}").get("denials")
    except (ApiError, OSError):
        return []
    lines = []
    for denial in denials if isinstance(denials, list) else []:
        if not isinstance(denial, dict):
            continue
        line = (f"refused: {denial.get('request') or 'a request'} {denial.get('reason', '')} at "
                f"{slurm_time(int(denial.get('time_ms') or 0))}")
        if denial.get("detail"):
            line += f" ({denial['detail']})"
        lines.append(shown(line))
    return lines


def _nodes(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "confirm-down":
        return confirm_down(args.names, settings)
    if args.names:
        print("sluice nodes: node names go with an action (confirm-down)", file=sys.stderr)
        return 2
    return run_nodes(args, settings)


def _show(args: argparse.Namespace, settings: Settings) -> int:
    if args.ref is None or (args.kind == "node" and "[" in args.ref):
        return _show_all(args, settings)
    answer = _get(settings, f"/v1/{args.kind}s/{quote(args.ref, safe='')}") if args.ref.strip(
        ".") else None
    if answer is None or not isinstance(answer.get(args.kind), dict):
        if answer is not None or not args.ref.strip("."):
            print(f"sluice show: no {args.kind} {args.ref!r}", file=sys.stderr)
        if args.kind == "job":  # a request the intake could not read never became a job
            client = Client(settings)
            for line in [*_denial_lines(client, args.ref), *dead_letter_lines(client, args.ref)]:
                print(f"sluice show: {args.ref}: {line}", file=sys.stderr)
        return 1
    row = answer[args.kind]
    if args.script:
        if args.kind != "job":
            print("sluice show: --script goes with a job", file=sys.stderr)
            return 2
        if not row.get("script"):
            why = ("it is sealed to the nodes' key and these views cannot open it"
                   if row.get("script_sealed")
                   else "it was submitted as a command" if "command" in row
                   else "only its owner and operators may read it")
            print(f"sluice show: job {row['job_id']} has no batch script to show ({why})",
                  file=sys.stderr)
            return 1
        sys.stdout.write(row["script"])
        return 0
    if args.json:
        print(json.dumps(row, indent=2))
        return 0
    client = Client(settings)
    if args.kind == "node":
        mark_reservations(client, [row])
    lines = _job_records(client, row, args.ref) if args.kind == "job" else node_lines(row, client)
    if args.kind == "job":  # requests under its SLUID the intake could not read (Sluice's own)
        lines += [f"   {dead_letter_field(letter)}"
                  for letter in dead_letters(client, str(row.get("job_sluid", "")))]
    for line in lines:
        print(line)
    return 0


def _show_all(args: argparse.Namespace, settings: Settings) -> int:
    """``scontrol show job`` / ``show node`` without a name: every job the views hold (active
    and recently ended, as slurmctld's memory) or every node, or the nodes of a host list;
    one blank line between records, as scontrol prints them."""
    wanted: list[str] | None = None
    if args.ref is not None:
        from scheduler.topology.hostlist import expand

        try:
            wanted = list(expand(args.ref))
        except ValueError as exc:
            print(f"sluice show: {exc}", file=sys.stderr)
            return 1
    answer = _get(settings, "/v1/jobs?all=1" if args.kind == "job" else "/v1/nodes")
    if answer is None:
        return 1
    rows = [row for row in answer.get(f"{args.kind}s") or []
            if args.kind == "node" or row.get("job_id")]  # a refused submission is no job
    if wanted is not None:
        by_name = {row.get("name"): row for row in rows}
        missing = [name for name in wanted if name not in by_name]
        if missing:
            print(f"sluice show: no node {missing[0]!r}", file=sys.stderr)
            return 1
        rows = [by_name[name] for name in wanted]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("No jobs in the system" if args.kind == "job" else "No nodes in the system")
        return 0
    client = Client(settings)
    if args.kind == "node":
        mark_reservations(client, rows)
    bases = array_bases(client, rows) if args.kind == "job" else {}
    records = [job_lines(row, now_ms(), job_id_text(row, bases)) if args.kind == "job"
               else node_lines(row, client) for row in rows]
    print("\n\n".join("\n".join(lines) for lines in records))
    return 0


def _job_records(client: Client, row: dict[str, Any], ref: str) -> list[str]:
    """scontrol's records of the job ``ref`` names: each task of an array named by its id
    (as ``scontrol show job ARRAYID``), one blank line between records; else the one job."""
    subject = request_subject(row, ref)
    tasks = [row]
    if subject != row["job_sluid"]:
        try:
            found = client.get(f"/v1/jobs?array={quote(subject, safe='')}")["jobs"]
        except ApiError:
            found = []
        tasks = sorted(found, key=lambda r: int(r.get("array_task_id", 0))) or [row]
    bases = array_bases(client, tasks[:1])
    lines: list[str] = []
    for task in tasks:
        lines += ([""] if lines else []) + job_lines(task, now_ms(), job_id_text(task, bases))
    return lines
