"""Administrator commands: ``sluice drain``, ``sluice resume`` (scontrol update node),
``sluice requeue`` (scontrol requeue / requeuehold) and ``sluice config apply`` (a cluster,
topology or resources file, as an ``ApplyConfig`` request whose answer is a fact)."""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any
from urllib.parse import quote

from cli.client import ApiError, ApiUnavailableError, Client, NoSuchJobError, request_subject
from cli.job_control import every_task_ended, refusal_line
from cli.submit import decided, real_user
from streams.settings import Settings

__all__ = ["add_parsers", "confirm_down"]


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
    status = 0
    for name in args.nodes:
        sluid = _node_sluid(client, name)
        record = {"name": name, "reason": args.reason, "down": args.down, "user": real_user()}
        if sluid is None:
            status = _unknown("drain", name)
        elif not decided(client, "drain", name, sluid, "DrainNode", record):
            status = 1
    return status


def _node_sluid(client: Client, name: str) -> str | None:
    """The node's SLUID; None when the views know no node of that name (the shard would
    ignore the request: Slurm's ``Invalid node name specified``); "" when the views do not
    answer (the request is sent all the same, with nothing to wait for)."""
    try:
        row = client.get(f"/v1/nodes/{quote(name, safe='')}")["node"]
    except ApiUnavailableError:
        return ""
    except (ApiError, KeyError):
        return None
    return str(row.get("node_sluid", "")) if isinstance(row, dict) else None


def _unknown(verb: str, name: str) -> int:
    from cli.slurm_program import current

    if current() == "scontrol":  # scontrol update NodeName=…: slurm_perror's line
        print(f"slurm_update error: Invalid node name specified ({name})", file=sys.stderr)
        return 1
    print(f"sluice {verb}: {name}: Invalid node name specified (no such node)", file=sys.stderr)
    return 1


def _resume(args: argparse.Namespace, settings: Settings) -> int:

    client = Client(settings)
    status = 0
    for name in args.nodes:
        sluid = _node_sluid(client, name)
        record = {"name": name, "user": real_user()}
        if sluid is None:
            status = _unknown("resume", name)
        elif not decided(client, "resume", name, sluid, "ResumeNode", record):
            status = 1
    return status


def confirm_down(names: list[str], settings: Settings) -> int:
    """``sluice nodes confirm-down [NODE...]``: the suspected nodes (of a suspected partition)
    go DOWN as not responding, their runs end NODE_FAIL and are requeued; they return to service
    as ``ReturnToService`` says when they answer again."""
    client = Client(settings)
    try:
        nodes = client.get("/v1/nodes")["nodes"]
    except ApiError as exc:
        print(f"sluice nodes confirm-down: {exc}", file=sys.stderr)
        return 1
    suspects = {n["name"]: n for n in nodes if n.get("suspect")}
    unknown = [name for name in names if name not in suspects]
    if unknown:
        print(f"sluice nodes confirm-down: not suspected: {', '.join(unknown)} "
              "(use 'sluice drain NODE -r REASON --down' for any node)", file=sys.stderr)
        return 1
    chosen = names or sorted(suspects)
    if not chosen:
        print("sluice nodes confirm-down: no node is suspected")
        return 0
    user = real_user()
    for name in chosen:
        client.send(name, "DrainNode", {"name": name, "down": True, "user": user,
                                        "reason": f"Not responding (confirmed down by {user})"})
    print(f"confirmed down: {', '.join(chosen)}")
    return 0


_ENDED = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                    "BOOT_FAIL", "DEADLINE", "PREEMPTED"})
"""A job's final states: ``requeue`` of such a job is refused before anything is sent."""


def _requeue(args: argparse.Namespace, settings: Settings) -> int:

    client = Client(settings)
    status = 0
    for ref in args.jobs:
        try:
            job = client.job(ref)
        except NoSuchJobError:  # scontrol's words
            print(f"Invalid job id specified for job {ref}", file=sys.stderr)
            status = 1
            continue
        except ApiError as exc:
            print(f"sluice requeue: {ref}: {exc}", file=sys.stderr)
            status = 1
            continue
        subject = request_subject(job, ref)  # an array's id: every task, as Slurm
        if job.get("state") in _ENDED and (subject == job.get("job_sluid")
                                           or every_task_ended(client, subject)):
            # the shard's refusal (JobNotRunning); it says nothing once it purged the job
            # (an array's: the task the id named, as hold/release say, once every task ended)
            print(f"Job/step already completing or completed for job {ref} (JobNotRunning: "
                  f"job is {job.get('state')})", file=sys.stderr)
            status = 1
            continue
        record = {"job_sluid": subject, "user": real_user(), "hold": args.hold}
        say = functools.partial(refusal_line, ref=ref, verb="requeue")
        if not decided(client, "requeue", ref, subject, "RequeueJob", record, say):
            status = 1
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


def auth_off_refusal(text: str, kind: str, auth: str) -> str | None:
    """Why a ``config apply`` of ``text`` is refused, or None: a cluster file that does not
    name ``AuthRequired`` turns it off (the embedded default), and a client that authenticates
    (``auth`` not ``none``) is on a cluster that requires credentials, as ``sluice up`` sets.
    A file that says ``AuthRequired: false`` means it; one the YAML reader refuses is left
    to the shard, which names the line."""
    if kind != "cluster" or auth in ("", "none"):
        return None
    import yaml

    try:
        top = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if isinstance(top, dict) and "AuthRequired" in top:
        return None
    return ("the file does not say AuthRequired, so applying it would turn authentication off "
            "(every request without a credential accepted as the user it names); add "
            "'AuthRequired: true' (or 'AuthRequired: false' to mean it)")


def _apply(args: argparse.Namespace, settings: Settings) -> int:
    import hashlib
    import time
    from pathlib import Path

    text = Path(args.file).read_text()
    refusal = auth_off_refusal(text, args.kind, settings.auth)
    if refusal is not None:
        print(f"sluice config apply: {args.file}: {refusal}", file=sys.stderr)
        return 1
    client = Client(settings)
    digest = hashlib.sha256(text.encode()).hexdigest()
    in_force = client.get("/v1/config")["config"].get(args.kind, {})
    config_sluid = client.sluids.new()
    client.send(config_sluid, "ApplyConfig", {"config_sluid": config_sluid, "kind": args.kind,
                                              "text": text, "source": args.file})
    if in_force.get("digest") == digest:
        return _unchanged(client, args, config_sluid, in_force)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if _refused(client, config_sluid):
            return 1
        current = client.get("/v1/config")["config"].get(args.kind, {})
        if current.get("digest") == digest:
            print(f"{args.kind} configuration {args.file} applied ({config_sluid})")
            return 0
        time.sleep(0.2)
    print("sluice config apply: no answer in time", file=sys.stderr)
    return 1


UNCHANGED_WAIT_S = 5.0
"""How long ``config apply`` of the text in force waits for a refusal: the core decides
nothing for the same text again (no fact to wait for), but refuses a user who may not apply a
configuration (``NotAdministrator``), within a second on a live system."""


def _unchanged(client: Client, args: argparse.Namespace, config_sluid: str,
               in_force: dict[str, Any]) -> int:
    """The text sent is the one in force: a refusal if one comes, else say nothing changed."""
    import time

    deadline = time.monotonic() + min(args.timeout, UNCHANGED_WAIT_S)
    while time.monotonic() < deadline:
        if _refused(client, config_sluid):
            return 1
        time.sleep(0.2)
    print(f"{args.kind} configuration {args.file} unchanged: the same text is in force "
          f"(applied as {in_force.get('config_sluid', '?')})")
    return 0


def _refused(client: Client, config_sluid: str) -> bool:
    """Print the refusal (RequestDenied) or rejection (InvalidConfig) of an ApplyConfig."""
    denied = client.denials(config_sluid)
    if denied:
        print(f"sluice config apply: refused: {denied[-1]['reason']}: "
              f"{denied[-1]['detail']}", file=sys.stderr)
        return True
    try:
        rejected = client.get(f"/v1/jobs/{config_sluid}")["job"]
    except ApiError:
        return False
    print(f"sluice config apply: rejected: {rejected.get('detail', '')}", file=sys.stderr)
    return True


def _show_config(args: argparse.Namespace, settings: Settings) -> int:
    import json

    print(json.dumps(Client(settings).get("/v1/config")["config"], indent=2))
    return 0
