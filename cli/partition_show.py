"""``scontrol show partition [NAME]`` and ``scontrol ping``, from the views.

A partition's record is scontrol's ``Key=Value`` layout, the keys Sluice has: ``AllowQos``,
``Default``, ``DefaultTime``, ``MaxNodes``, ``MaxTime``, ``Nodes``, ``PriorityJobFactor``,
``PriorityTier``, ``State``, ``TotalCPUs``, ``TotalNodes`` (a partition without a node list
holds every node, as ``Nodes=ALL``); without a cluster configuration the embedded default's
one partition, ``main``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from cli.client import ApiError, Client
from cli.formats import elapsed, host_list
from cli.nodes_cmd import DEFAULT_PARTITION
from scheduler.topology.hostlist import natural_sorted
from streams.settings import Settings

__all__ = ["ping", "show_partitions"]


def show_partitions(names: list[str], settings: Settings) -> int:
    """Print each partition named (every one when none is), a blank line between."""
    client = Client(settings)
    config = client.get("/v1/config")["config"].get("cluster", {})
    parts: list[Mapping[str, Any]] = list(config.get("partitions") or [DEFAULT_PARTITION])
    nodes = client.get("/v1/nodes")["nodes"]
    chosen = [p for p in parts if not names or p["name"] in names]
    if not chosen:
        print(f"Partition {names[0]} not found", file=sys.stderr)
        return 1
    lines: list[str] = []
    for part in chosen:
        lines += ([""] if lines else []) + partition_lines(part, nodes)
    print("\n".join(lines))
    return 0


def partition_lines(part: Mapping[str, Any], nodes: list[Mapping[str, Any]]) -> list[str]:
    """scontrol's record of one partition (``nodes``: the views' node rows)."""
    members = part.get("nodes")
    held = [n for n in nodes if members is None or n["name"] in members]
    names = natural_sorted([str(n["name"]) for n in held])
    limit = int(part.get("max_time_s") or 0)
    default_time = int(part.get("default_time_s") or 0)
    max_nodes = int(part.get("max_nodes") or 0)
    qos = ",".join(part.get("allow_qos") or ["ALL"])
    return [
        f"PartitionName={part['name']}",
        f"   AllowGroups=ALL AllowAccounts=ALL AllowQos={qos}",
        f"   Default={'YES' if part.get('default') else 'NO'}",
        f"   DefaultTime={elapsed(default_time) if default_time else 'NONE'}"
        f" MaxNodes={max_nodes or 'UNLIMITED'}"
        f" MaxTime={elapsed(limit) if limit else 'UNLIMITED'}",
        f"   Nodes={'ALL' if members is None else host_list(names) or '(null)'}",
        f"   PriorityJobFactor={int(part.get('priority_job_factor', 1))}"
        f" PriorityTier={int(part.get('priority_tier', 1))}",
        f"   State={part.get('state', 'UP')} TotalCPUs={sum(int(n.get('cpus', 0)) for n in held)}"
        f" TotalNodes={len(held)}",
    ]


def ping(settings: Settings) -> int:
    """``scontrol ping``: whether the views (and so the system behind them) answer."""
    try:
        Client(settings).get("/v1/status")
    except ApiError:
        print(f"Slurmctld(primary) at {settings.api} is DOWN")
        return 1
    print(f"Slurmctld(primary) at {settings.api} is UP")
    return 0
