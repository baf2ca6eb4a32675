"""Administrator commands: ``sluice drain``, ``sluice resume`` (scontrol update node) and
``sluice requeue`` (scontrol requeue / requeuehold)."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from cli.client import ApiError, Client
from streams.settings import Settings

__all__ = ["add_parsers"]


def add_parsers(sub: Any) -> None:
    """Register drain, resume and requeue."""
    d = sub.add_parser("drain", help="set nodes DRAIN (or DOWN with --down)")
    d.add_argument("nodes", nargs="+")
    d.add_argument("-r", "--reason", required=True)
    d.add_argument("--down", action="store_true", help="DOWN now: its runs end NODE_FAIL")
    d.set_defaults(run=_drain)
    r = sub.add_parser("resume", help="return DRAIN or DOWN nodes to service")
    r.add_argument("nodes", nargs="+")
    r.set_defaults(run=_resume)
    q = sub.add_parser("requeue", help="requeue jobs (scontrol requeue)")
    q.add_argument("jobs", nargs="+", help="job ids or SLUIDs")
    q.add_argument("--hold", action="store_true", help="requeue held (scontrol requeuehold)")
    q.set_defaults(run=_requeue)


def _drain(args: argparse.Namespace, settings: Settings) -> int:
    client = Client(settings)
    for name in args.nodes:
        client.send(name, "DrainNode", {"name": name, "reason": args.reason, "down": args.down,
                                        "user": getpass.getuser()})
    return 0


def _resume(args: argparse.Namespace, settings: Settings) -> int:
    client = Client(settings)
    for name in args.nodes:
        client.send(name, "ResumeNode", {"name": name, "user": getpass.getuser()})
    return 0


def _requeue(args: argparse.Namespace, settings: Settings) -> int:
    client = Client(settings)
    status = 0
    for ref in args.jobs:
        try:
            job = client.get(f"/v1/jobs/{ref}")["job"]
        except ApiError as exc:
            print(f"sluice requeue: {ref}: {exc}", file=sys.stderr)
            status = 1
            continue
        client.send(job["job_sluid"], "RequeueJob", {"job_sluid": job["job_sluid"],
                                                    "user": getpass.getuser(),
                                                    "hold": args.hold})
    return status
