"""Administrator commands: ``sluice drain``, ``sluice resume`` (scontrol update node),
``sluice requeue`` (scontrol requeue / requeuehold) and ``sluice config apply`` (a cluster,
topology or resources file, as an ``ApplyConfig`` request whose answer is a fact)."""

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
    add_config_parser(sub)


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


def add_config_parser(sub: Any) -> None:
    """Register ``sluice config apply FILE``."""
    c = sub.add_parser("config", help="apply a cluster, topology or resources file")
    verbs = c.add_subparsers(dest="verb", required=True)
    a = verbs.add_parser("apply", help="send the file as an ApplyConfig request and wait")
    a.add_argument("file")
    a.add_argument("--kind", choices=["cluster", "topology", "resources"], default="cluster")
    a.add_argument("--timeout", type=float, default=60.0)
    a.set_defaults(run=_apply)
    s = verbs.add_parser("show", help="what is in force")
    s.set_defaults(run=_show_config)


def _apply(args: argparse.Namespace, settings: Settings) -> int:
    import hashlib
    import time
    from pathlib import Path

    text = Path(args.file).read_text()
    client = Client(settings)
    config_sluid = client.sluids.new()
    client.send(config_sluid, "ApplyConfig", {"config_sluid": config_sluid, "kind": args.kind,
                                              "text": text, "source": args.file})
    digest = hashlib.sha256(text.encode()).hexdigest()
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        current = client.get("/v1/config")["config"].get(args.kind, {})
        if current.get("digest") == digest:
            print(f"{args.kind} configuration {args.file} applied ({config_sluid})")
            return 0
        try:
            rejected = client.get(f"/v1/jobs/{config_sluid}")["job"]
            print(f"sluice config apply: rejected: {rejected.get('detail', '')}",
                  file=sys.stderr)
            return 1
        except ApiError:
            time.sleep(0.2)
    print("sluice config apply: no answer in time", file=sys.stderr)
    return 1


def _show_config(args: argparse.Namespace, settings: Settings) -> int:
    import json

    print(json.dumps(Client(settings).get("/v1/config")["config"], indent=2))
    return 0
