"""``sluice submit`` (sbatch), ``sluice cancel`` (scancel), ``sluice hold`` / ``release``."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import Any

from cli.client import ApiError, Client
from cli.timefmt import parse_time_limit
from streams.settings import Settings

__all__ = ["add_parsers", "build_spec"]


def add_parsers(sub: Any) -> None:
    """Register submit, cancel, hold and release."""
    p = sub.add_parser("submit", help="submit a batch job (like sbatch)",
                       usage="sluice submit [options] -- command [args...]")
    p.add_argument("-N", "--nodes", default="1", help="node count, or min-max")
    p.add_argument("-n", "--ntasks", type=int, default=1)
    p.add_argument("-c", "--cpus-per-task", type=int, default=1)
    p.add_argument("-p", "--partition", default="")
    p.add_argument("-q", "--qos", default="")
    p.add_argument("-A", "--account", default="")
    p.add_argument("-J", "--job-name", default="")
    p.add_argument("-t", "--time", default="0", help="time limit (minutes, HH:MM:SS, D-HH…)")
    p.add_argument("--gpus-per-node", type=int, default=0)
    p.add_argument("--gres", default="", help="gpu[:type]:count")
    p.add_argument("--mem", type=int, default=0, help="memory per node in MB")
    p.add_argument("--exclusive", nargs="?", const="node", default="",
                   help="whole nodes; --exclusive=topo for whole base blocks")
    p.add_argument("-o", "--output", default="")
    p.add_argument("-e", "--error", default="")
    p.add_argument("-D", "--chdir", default="")
    p.add_argument("--requeue", nargs="?", const="yes", default="",
                   choices=["yes", "expedite"], help="requeue on failure (=expedite)")
    p.add_argument("--no-requeue", action="store_const", const="no", dest="requeue")
    p.add_argument("--begin", type=int, default=0, help="begin time, Unix ms")
    p.add_argument("-d", "--dependency", default="")
    p.add_argument("--nice", type=int, default=0)
    p.add_argument("-H", "--hold", action="store_true")
    p.add_argument("-a", "--array", default="")
    p.add_argument("-L", "--licenses", default="")
    p.add_argument("--resources", default="")
    p.add_argument("--segment", type=int, default=0)
    p.add_argument("--spread-segments", action="store_true")
    p.add_argument("--consolidate-segments", action="store_true")
    p.add_argument("--switches", default="", help="N[@max-wait]")
    p.add_argument("--hot-swap", default="", choices=["", "yes", "no"])
    p.add_argument("--comment", default="")
    p.add_argument("--export", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("-W", "--wait", action="store_true", help="wait for the job to end")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait with -W")
    p.add_argument("--parsable", action="store_true", help="print only the job id")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.set_defaults(run=_submit)

    for verb, helptext in (("cancel", "cancel jobs (like scancel)"),
                           ("hold", "hold pending jobs"), ("release", "release held jobs")):
        q = sub.add_parser(verb, help=helptext)
        q.add_argument("jobs", nargs="+", help="job ids or SLUIDs")
        q.set_defaults(run=_job_verb, verb=verb)


def build_spec(args: argparse.Namespace) -> dict[str, Any]:
    """The JobSpec record for parsed ``submit`` arguments (raises ValueError on bad input)."""
    nodes_min, _, nodes_max = str(args.nodes).partition("-")
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    gpus, gpu_type = args.gpus_per_node, ""
    if args.gres:
        parts = args.gres.split(":")
        if parts[0] != "gpu" or len(parts) not in (2, 3):
            raise ValueError(f"--gres {args.gres!r}: expected gpu:COUNT or gpu:TYPE:COUNT")
        gpus, gpu_type = int(parts[-1]), (parts[1] if len(parts) == 3 else "")
    switches, _, wait = str(args.switches).partition("@")
    env = {}
    for item in args.export:
        name, _, value = item.partition("=")
        env[name] = value
    return {
        "name": args.job_name or (Path(command[0]).name if command else ""),
        "user": getpass.getuser(), "account": args.account, "partition": args.partition,
        "qos": args.qos, "nodes_min": int(nodes_min), "nodes_max": int(nodes_max or 0),
        "ntasks": args.ntasks, "cpus_per_task": args.cpus_per_task, "gpus_per_node": gpus,
        "gpu_type": gpu_type, "mem_per_node_mb": args.mem,
        "time_limit_s": parse_time_limit(args.time), "exclusive": args.exclusive == "node",
        "command": command, "workdir": str(Path(args.chdir or Path.cwd()).resolve()), "env": env,
        "output": args.output, "error": args.error, "requeue": args.requeue or "",
        "begin_time_ms": args.begin, "dependency": args.dependency, "nice": args.nice,
        "hold": args.hold, "array": args.array, "licenses": args.licenses,
        "resources": args.resources, "segment": args.segment,
        "spread_segments": args.spread_segments,
        "consolidate_segments": args.consolidate_segments,
        "exclusive_topo": args.exclusive == "topo", "switches": int(switches or 0),
        "switches_max_wait_s": parse_time_limit(wait) if wait else 0,
        "hot_swap": args.hot_swap, "comment": args.comment,
    }


def _submit(args: argparse.Namespace, settings: Settings) -> int:
    try:
        spec = build_spec(args)
    except ValueError as exc:
        print(f"sluice submit: {exc}", file=sys.stderr)
        return 2
    client = Client(settings)
    job_sluid = client.sluids.new()
    client.send(job_sluid, "SubmitJob", {"job_sluid": job_sluid, "spec": spec})
    job = client.wait_for_job(job_sluid, timeout_s=60)
    if job["state"] == "REJECTED":
        print(f"sluice submit: rejected: {job['reason']}: {job.get('detail', '')}",
              file=sys.stderr)
        return 1
    print(job["job_id"] if args.parsable else
          f"Submitted batch job {job['job_id']} ({job_sluid})")
    if not args.wait:
        return 0
    job = client.wait_for_job(job_sluid, timeout_s=args.timeout, done=True)
    if not args.parsable:
        print(f"Job {job['job_id']} ended {job['state']} (exit code {job['exit_code']}"
              f"{', signal ' + str(job['signal']) if job.get('signal') else ''})")
    return 0 if job["state"] == "COMPLETED" else 1


def _job_verb(args: argparse.Namespace, settings: Settings) -> int:
    client = Client(settings)
    status = 0
    for ref in args.jobs:
        try:
            job = client.get(f"/v1/jobs/{ref}")["job"]
        except ApiError as exc:
            print(f"sluice {args.verb}: {ref}: {exc}", file=sys.stderr)
            status = 1
            continue
        name = {"cancel": "CancelJob", "hold": "HoldJob", "release": "ReleaseJob"}[args.verb]
        record: dict[str, Any] = {"job_sluid": job["job_sluid"], "user": getpass.getuser()}
        client.send(job["job_sluid"], name, record)
    return status
