"""``sluice nodes`` as sinfo prints it: ``-N`` (a line per node), ``-l`` (long), ``-o``
(``%`` codes), ``-p``, ``-t``, ``-h``/``--noheader``, ``-R`` (the reasons of the nodes down,
drained or failing: ``%20E %9U %19H %N``), ``-s`` (a line per partition with its nodes
allocated/idle/other/total: ``%#P %.5a %.10l %.16F %N``).

As sinfo, lines group the nodes whose printed fields are all equal (so the default groups by
partition, availability, time limit and state), the node list compressed (``n[1-4]``). The
default partition is marked ``*``; a node suspected of being cut off gets sinfo's ``*``
(not responding) after its state. Formats are sinfo's: ``%#P %.5a %.10l %.6D %.6t %N``
(default), ``%#N %.6D %#P %6t`` (``-N``) and their ``-l`` forms.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from typing import Any

from cli.client import Client
from cli.formats import gres, host_list, parse_percent, render
from cli.sinfo_states import VALID, parse_states
from cli.timefmt import format_duration
from scheduler.topology.hostlist import expand, natural_sorted
from streams.settings import Settings

__all__ = ["DEFAULT_PARTITION", "FORMATS", "SINFO_CODES", "allocated_cpus", "mark_reservations",
           "node_lines", "run_nodes"]

FORMATS = {
    (False, False): "%#P %.5a %.10l %.6D %.6t %N",
    (True, False): "%#N %.6D %#P %6t",
    (False, True): "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N",
    (True, True): "%#N %.6D %#P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E",
}
DEFAULT_PARTITION: Mapping[str, Any] = {"name": "main", "default": True, "state": "UP",
                                        "max_time_s": 0, "nodes": None}
"""The embedded default cluster's one partition (no cluster configuration applied)."""
REASONS_FORMAT = "%20E %9U %19H %N"
SUMMARY_FORMAT = "%#P %.5a %.10l %.16F %N"
_NOT_IN_SERVICE = frozenset({"down", "drained", "draining", "fail", "failing", "invalid_reg"})
"""The long states ``-R`` lists (sinfo: down, drained, fail or failing)."""
PAUSED_REASON = "State directory "
"""The start of the reason of a node whose daemon takes no commands (its state directory is
full or read-only: ``NodeReason.STATE_DIR_PAUSED``): shown as its reason and listed by ``-R``
too (Sluice's; the node is not drained, only kept from new work, ``*``)."""
SINFO_CODES: dict[str, tuple[str, str]] = {
    "P": ("partition", "PARTITION"), "R": ("partition_name", "PARTITION"),
    "a": ("avail", "AVAIL"), "l": ("timelimit", "TIMELIMIT"), "D": ("count", "NODES"),
    "t": ("state", "STATE"), "T": ("state_long", "STATE"), "N": ("nodelist", "NODELIST"),
    "n": ("nodelist", "HOSTNAMES"), "c": ("cpus", "CPUS"), "m": ("memory", "MEMORY"),
    "G": ("gres", "GRES"), "f": ("features", "AVAIL_FEATURES"),
    "b": ("features", "ACTIVE_FEATURES"),
    "E": ("reason", "REASON"), "z": ("sct", "S:C:T"), "d": ("tmp_disk", "TMP_DISK"),
    "w": ("weight", "WEIGHT"), "s": ("job_size", "JOB_SIZE"), "r": ("root", "ROOT"),
    "h": ("oversubscribe", "OVERSUBSCRIBE"), "g": ("groups", "GROUPS"),
    "U": ("reason_user", "USER"), "H": ("reason_time", "TIMESTAMP"),
    "F": ("nodes_aiot", "NODES(A/I/O/T)"), "C": ("cpus_aiot", "CPUS(A/I/O/T)"),
    "e": ("free_mem", "FREE_MEM"),
    "O": ("cpu_load", "CPU_LOAD"),
}
_COMPACT = {"IDLE": "idle", "MIXED": "mix", "ALLOCATED": "alloc", "DRAIN": "drain",
            "DRAINING": "drng", "DRAINED": "drain", "DOWN": "down", "COMPLETING": "comp",
            "UNKNOWN": "unk", "FAIL": "fail", "FUTURE": "futr"}
_LONG = {"IDLE": "idle", "MIXED": "mixed", "ALLOCATED": "allocated", "DRAIN": "drained",
         "DRAINING": "draining", "DRAINED": "drained", "DOWN": "down",
         "COMPLETING": "completing", "UNKNOWN": "unknown"}
_IN_SERVICE = frozenset({"IDLE", "MIXED", "ALLOCATED"})
_COMPACT.update(MAINT="maint", RESERVED="resv")
_LONG.update(MAINT="maint", RESERVED="reserved")
_AVAIL = {"UP": "up", "DOWN": "down", "DRAIN": "drain", "INACTIVE": "inact"}
_GROUPED = {"nodelist", "count", "nodes_aiot", "cpus_aiot"}


def add_node_options(n: Any) -> None:
    """sinfo's options on the ``nodes`` parser (its ``-h`` is ``--noheader``)."""
    n.add_argument("--help", action="help", help="show this help and exit")
    n.add_argument("-N", "--Node", "--node-oriented", dest="node_oriented",
                   action="store_true", help="one line per node")
    n.add_argument("-l", "--long", action="store_true")
    n.add_argument("-o", "--format", default="", help="sinfo %%-format")
    n.add_argument("-p", "--partition", default="", help="comma list of partitions")
    n.add_argument("-t", "--states", default="", help="comma list of node states (idle,down)")
    n.add_argument("-h", "--noheader", action="store_true")
    n.add_argument("-n", "--nodes", default="", help="only these nodes (a host list)")
    n.add_argument("-a", "--all", action="store_true",
                   help="accepted: every partition is shown (Sluice hides none)")
    n.add_argument("-e", "--exact", action="store_true",
                   help="accepted: lines group only nodes whose printed fields are all equal")
    n.add_argument("-R", "--list-reasons", dest="reasons", action="store_true",
                   help="the reasons of the nodes down, drained or failing")
    n.add_argument("-s", "--summarize", action="store_true",
                   help="a line per partition: nodes allocated/idle/other/total")
    n.add_argument("-T", "--reservation", action="store_true",
                   help="the advanced reservations (scontrol create reservation)")


def nodes_named(nodes: list[dict[str, Any]], hosts: str) -> list[dict[str, Any]]:
    """The nodes of the host list ``hosts`` (every node when empty; ValueError when it does
    not parse)."""
    if not hosts:
        return nodes
    wanted = frozenset(expand(hosts))
    return [n for n in nodes if n["name"] in wanted]


def run_nodes(args: argparse.Namespace, settings: Settings) -> int:
    """Print the nodes as sinfo would (or the views' answer with ``--json``)."""
    default = (REASONS_FORMAT if args.reasons else SUMMARY_FORMAT if args.summarize
               else FORMATS[(args.node_oriented, args.long)])
    try:
        layout = parse_percent(args.format or default, SINFO_CODES, "-o")
    except ValueError as error:
        print(f"sluice nodes: {error}", file=sys.stderr)
        return 2
    try:
        states = parse_states(args.states)
    except ValueError as error:  # sinfo's two lines, exit 1
        print(f"sluice nodes: error: {error}\nsluice nodes: error: valid states: {VALID}",
              file=sys.stderr)
        return 1
    if args.reservation:
        from cli.reservations_cmd import sinfo_reservations

        return sinfo_reservations(settings, header=not args.noheader)
    client = Client(settings)
    answer = client.get("/v1/nodes")
    mark_reservations(client, answer["nodes"])
    try:
        answer["nodes"] = nodes_named(answer["nodes"], args.nodes)
    except ValueError as error:
        print(f"sluice nodes: -n: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    partitions = client.get("/v1/config")["config"].get("cluster", {}).get("partitions") or []
    keys = [c.key for c in layout if not isinstance(c, str)]
    used = allocated_cpus(client.get("/v1/jobs")["jobs"]) if "cpus_aiot" in keys else {}
    lines = node_lines(answer["nodes"], partitions, keys, args.node_oriented, used)
    wanted_parts = {p for p in args.partition.split(",") if p}
    lines = [r for r in lines
             if (not args.reasons or r["state_long"].rstrip("*~#") in _NOT_IN_SERVICE
                 or r["reason"].startswith(PAUSED_REASON))
             and (not wanted_parts or r["partition_name"] in wanted_parts)
             and (states is None or states.keeps(r))]
    if args.long:
        print(time.strftime("%a %b %d %H:%M:%S %Y"))
    for line in render(lines, layout, header=not args.noheader):
        print(line.rstrip())
    return 0


def allocated_cpus(jobs: list[Mapping[str, Any]]) -> dict[str, int]:
    """The CPUs the jobs holding nodes hold on each (their ``alloc``), by node name."""
    used: dict[str, int] = {}
    for job in jobs:
        held = job.get("alloc") if job.get("nodes") else None
        if isinstance(held, dict) and job.get("state") != "PENDING":
            for name, share in held.items():
                used[name] = used.get(name, 0) + int(share[0])
    return used


def node_lines(nodes: list[Mapping[str, Any]], partitions: list[Mapping[str, Any]],
               keys: list[str], per_node: bool,
               used: Mapping[str, int] | None = None) -> list[dict[str, str]]:
    """sinfo's lines: one per (node, partition), grouped on the printed fields (``keys``)
    unless ``per_node``; a group's node list is compressed and counted, its CPUs added up
    (``%C``, from ``used``: the CPUs jobs hold on each node)."""
    parts = partitions or [DEFAULT_PARTITION]
    groups: dict[tuple[str, ...], tuple[dict[str, str], list[str]]] = {}
    for part in parts:
        members = part.get("nodes")
        for node in nodes:
            listed = node.get("partitions") or []
            if members is not None and node["name"] not in members:
                continue
            if members is None and not partitions and listed and part["name"] not in listed:
                continue
            values = _values(node, part)
            ident = tuple(values[k] for k in keys if k not in _GROUPED)
            if per_node:
                ident = (node["name"], *ident)
            if ident not in groups:
                groups[ident] = (values, [])
            groups[ident][1].append(node["name"])
    states = {str(node["name"]): str(node.get("state", "UNKNOWN")) for node in nodes}
    by_name = {str(node["name"]): node for node in nodes}
    lines = []
    for values, names in groups.values():
        lines.append({**values, "nodelist": host_list(natural_sorted(names)),
                      "count": str(len(names)), "nodes_aiot": _aiot(states, names),
                      "cpus_aiot": _cpus_aiot(by_name, names, used or {})})
    return lines


def _cpus_aiot(nodes: Mapping[str, Mapping[str, Any]], names: list[str],
               used: Mapping[str, int]) -> str:
    """sinfo's ``%C``: the CPUs of ``names`` allocated, idle (free on a node in service),
    other (free on a node down, drained or not responding), in all."""
    allocated = idle = other = total = 0
    for name in names:
        node = nodes[name]
        cpus = int(node.get("cpus") or 0)
        held = min(used.get(name, 0), cpus)
        in_service = node.get("state") in _IN_SERVICE and not no_respond(node)
        allocated, total = allocated + held, total + cpus
        if in_service:
            idle += cpus - held
        else:
            other += cpus - held
    return f"{allocated}/{idle}/{other}/{total}"


def _aiot(states: Mapping[str, str], names: list[str]) -> str:
    """sinfo's ``%F``: how many of ``names`` are allocated, idle, other, in all."""
    allocated = sum(states[n] in ("ALLOCATED", "MIXED") for n in names)
    idle = sum(states[n] == "IDLE" for n in names)
    return f"{allocated}/{idle}/{len(names) - allocated - idle}/{len(names)}"


NOT_RESPONDING = "Not responding"
"""The start of the reason the core gives a node it took DOWN for its silence."""


def no_respond(node: Mapping[str, Any]) -> bool:
    """Slurm's NO_RESPOND flag (``*`` after the state): a node suspected of being cut off, or
    one the core took DOWN because it stopped answering (not one an operator took down)."""
    return bool(node.get("suspect")) or (
        node.get("state") == "DOWN" and str(node.get("reason", "")).startswith(NOT_RESPONDING))


def mark_reservations(client: Client, nodes: list[dict[str, Any]]) -> None:
    """Set each node's ``resv`` (``MAINT``, ``RESERVED`` or absent) from the reservations
    active by this host's clock."""
    from cli.reservations_cmd import active_marks, reservation_rows

    marks = active_marks(reservation_rows(client), int(time.time() * 1000))
    for node in nodes:
        if node["name"] in marks:
            node["resv"] = marks[node["name"]]


def _values(node: Mapping[str, Any], part: Mapping[str, Any]) -> dict[str, str]:
    state = str(node.get("state", "UNKNOWN"))
    if state == "DRAIN" and node.get("jobs"):
        state = "DRAINING"
    resv = node.get("resv")  # sinfo: maint in a MAINT window, resv when idle in another
    if (resv == "MAINT" and state in _IN_SERVICE) or (resv == "RESERVED" and state == "IDLE"):
        state = resv
    mark = "*" if no_respond(node) else ""
    limit = int(part.get("max_time_s") or 0)
    gpus = int(node.get("gpus") or 0)
    return {
        "partition": str(part["name"]) + ("*" if part.get("default") else ""),
        "partition_name": str(part["name"]),
        "avail": _AVAIL.get(str(part.get("state", "UP")), str(part.get("state", "up")).lower()),
        "timelimit": format_duration(limit) if limit else "infinite",
        "state": _COMPACT.get(state, state.lower()[:6]) + mark,
        "state_long": _LONG.get(state, state.lower()) + mark,
        "cpus": str(node.get("cpus", 0)), "memory": str(node.get("mem_mb", 0)),
        "gres": gres(node.get("gpu_type"), gpus) if gpus else "(null)",
        "features": ",".join(node.get("features", [])) or "(null)",
        "reason": str(node.get("reason") or _paused(node) or "none"),
        "sct": f"1:{node.get('cpus', 0)}:1",
        "tmp_disk": "0", "weight": "1", "job_size": "1-infinite", "root": "no",
        "oversubscribe": "NO", "groups": "all",
        "reason_user": _reason_user(node),
        "reason_time": _timestamp(int(node.get("state_ms") or 0)),
        "free_mem": "N/A", "cpu_load": "N/A",  # not gathered (sinfo's when slurmd cannot tell)
    }


def _paused(node: Mapping[str, Any]) -> str:
    """The suspicion of a node whose daemon takes no commands (else "")."""
    suspect = str(node.get("suspect") or "")
    return suspect if suspect.startswith(PAUSED_REASON) else ""


def _reason_user(node: Mapping[str, Any]) -> str:
    """Who set a node's reason, as sinfo's ``%U``: the operator who drained it or took it down,
    ``slurm`` for the ones Sluice sets itself (a node not responding, rebooted, registered
    anew), ``(null)`` when not recorded (a reason from before release v4)."""
    from scheduler.shard.reasons import NodeReason

    reason = str(node.get("reason") or "")
    if not reason:
        return "(null)"
    if node.get("reason_by"):
        return str(node["reason_by"])
    return "slurm" if reason.startswith(NodeReason.SYSTEM_DOWN) else "(null)"


def _timestamp(ms: int) -> str:
    """sinfo's ``%H``: ``2026-12-05T18:48:06`` in local time, ``Unknown`` when not known."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ms / 1000)) if ms else "Unknown"
