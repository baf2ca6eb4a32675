"""The node rows of the views, and what a ``ConfigApplied`` tells them.

A node row (key ``name``) is folded from ``NodeRegistered`` (resources, partitions, features)
and ``NodeStateChanged`` (``service``: the state the ledger announced). Its ``state`` is what
sinfo shows: the service state, or for a node in service IDLE, MIXED or ALLOCATED from the CPUs
the runs on it were allocated (``JobStarted``'s ``alloc_cpus``, kept in the job rows' ``alloc``),
as slurmctld derives it. Its ``block`` is a ``block=<name>`` feature, else the block the
topology in force gives it (``ConfigApplied(topology).blocks``). A cluster ``ConfigApplied``
announces the default partition (``default_partition``).

Its ``timeline`` is what sreport's cluster utilization reads: ``[time_ms, service, cpus]`` each
time a ``NodeRegistered`` or ``NodeStateChanged`` changed the service state or the CPU count
(the last :data:`TIMELINE_KEPT`; a node that flaps more than that forgets its oldest spells).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from projections.legacy import spec_alloc
from scheduler.topology.hostlist import expand

if TYPE_CHECKING:
    from projections.views import Touched, Views

__all__ = [
    "IN_SERVICE", "config_applied", "node_registered", "node_state_changed", "partition_rows",
    "show_state",
]

Row = dict[str, Any]
_NONE: dict[str, list[int]] = {}
_ABSENT: Any = object()
"""A field a row lacks (a row's ``service`` may be any value, ``None`` included)."""


def node_registered(v: Views, r: Row, t: Touched) -> None:
    row = v.nodes.get(r["name"], {"state": "UNKNOWN", "service": "UNKNOWN", "reason": "",
                                  "runs": [], "jobs": []})
    row.update(name=r["name"], node_sluid=r["node_sluid"], cpus=r["cpus"], mem_mb=r["mem_mb"],
               gpus=r.get("gpus", 0), gpu_type=r.get("gpu_type", ""),
               features=list(r.get("features", [])), partitions=list(r.get("partitions", [])),
               registered_ms=r["time_ms"])
    row["block"] = _block_of(row["features"]) or v.blocks.get(r["name"], "")
    _mark(row, r["time_ms"])
    v.nodes[r["name"]] = row
    t.nodes.add(r["name"])


def node_state_changed(v: Views, r: Row, t: Touched) -> None:
    row = v.nodes.get(r["name"])
    if row is not None:
        service = "IDLE" if r["state"] in IN_SERVICE else r["state"]  # older ledgers: MIXED…
        row.update(service=service, reason=r.get("reason", ""), reason_by=r.get("by", ""),
                   state_ms=r["time_ms"], suspect="")  # an announced state ends a suspicion
        _mark(row, r["time_ms"])
        show_state(v, row)
        t.nodes.add(r["name"])


IN_SERVICE = frozenset({"IDLE", "MIXED", "ALLOCATED"})
TIMELINE_KEPT = 1024
"""How many service-state spells a node row keeps for sreport (the newest)."""


def _mark(row: Row, time_ms: int) -> None:
    """Add the row's service state and CPUs at ``time_ms`` to its ``timeline`` when either
    changed (a new list: rows are persisted as they are)."""
    entry = [int(time_ms), str(row.get("service", "UNKNOWN")), int(row.get("cpus", 0))]
    timeline = row.get("timeline") or []
    if timeline and timeline[-1][1:] == entry[1:]:
        return
    row["timeline"] = [*timeline[-(TIMELINE_KEPT - 1):], entry]


def show_state(v: Views, row: Row) -> None:
    """The node's shown state: its service state, or IDLE/MIXED/ALLOCATED when in service."""
    service = row.get("service", _ABSENT)  # one lookup: called for every node of every run
    if service is _ABSENT:
        service = row.get("state", "UNKNOWN")
    if service not in IN_SERVICE:
        row["state"] = service
        return
    held = row.get("jobs")
    if not held:
        row["state"] = "IDLE"
        return
    cpus, used, jobs, ids, name = int(row.get("cpus", 0)), 0, v.jobs, v.job_ids, row["name"]
    for job_id in held:
        job = jobs.get(ids.get(job_id, ""))
        if job is not None:
            share = job.get("alloc", _NONE).get(name)
            used += share[0] if share is not None else spec_alloc(job, row)[0]
            if used >= cpus:  # no CPU left: no need to count the rest
                row["state"] = "ALLOCATED"
                return
    row["state"] = "MIXED"


def _block_of(features: list[str]) -> str:
    for feature in features:
        key, sep, value = feature.partition("=")
        if sep and key == "block":
            return value
    return ""


def config_applied(v: Views, r: Row, t: Touched) -> None:
    v.configs[r["kind"]] = {"kind": r["kind"], "config_sluid": r["config_sluid"],
                            "digest": r["digest"], "applied_ms": r["time_ms"]}
    if r.get("kind") == "cluster":
        # the text: accounts, users and QOS as sacctmgr shows them (cli/sacctmgr_cmd.py)
        v.configs["cluster"]["text"] = str(r.get("text") or "")
        parts = v.configs["cluster"]["partitions"] = partition_rows(r)
        if parts:  # a ledger before the partition fields announces none: keep the nodes'
            _place_nodes(v, parts, t)
        v.default_partition = str(r.get("default_partition") or v.default_partition)
        v.private_jobs = bool(r.get("private_jobs", False))  # the core's reading of the config
        v.privileged = tuple(r.get("privileged") or ())
        v.configs["cluster"]["privileged"] = list(v.privileged)  # whose hold is an admin's
    elif r.get("kind") == "topology":
        v.blocks = {str(k): str(b) for k, b in dict(r.get("blocks") or {}).items()}
        for name, row in v.nodes.items():
            block = _block_of(row.get("features", [])) or v.blocks.get(name, "")
            if row.get("block") != block:
                row["block"] = block
                t.nodes.add(name)


def partition_rows(r: Row) -> list[Row]:
    """The partitions a cluster ``ConfigApplied`` announces, as sinfo and scontrol show them
    (AVAIL, TIMELIMIT, the nodes: ``None`` for every node; DefaultTime, MaxNodes, AllowQos,
    PriorityTier, PriorityJobFactor: their defaults from a ledger before those fields);
    [] from a ledger before the partition fields."""
    names = list(r.get("partition_names") or [])
    states = list(r.get("partition_states") or [])
    limits = list(r.get("partition_max_times") or [])
    nodes = list(r.get("partition_nodes") or [])
    default = r.get("default_partition") or ""
    more = zip(_or_each(r, "partition_default_times", 0, names),
               _or_each(r, "partition_max_nodes", 0, names),
               _or_each(r, "partition_allow_qos", "", names),
               _or_each(r, "partition_priority_tiers", 1, names),
               _or_each(r, "partition_job_factors", 1, names), strict=False)
    return [
        {"name": name, "default": name == default, "state": state, "max_time_s": int(limit),
         "nodes": list(expand(listed)) if listed else None,
         "default_time_s": int(default_time), "max_nodes": int(max_nodes),
         "allow_qos": [q for q in str(qos).split(",") if q], "priority_tier": int(tier),
         "priority_job_factor": int(factor)}
        for (name, state, limit, listed), (default_time, max_nodes, qos, tier, factor)
        in zip(zip(names, states, limits, nodes, strict=False), more, strict=False)
    ]


def _or_each(r: Row, key: str, default: Any, names: list[str]) -> list[Any]:
    """A parallel partition list of a fact, or ``default`` for each partition (not recorded)."""
    listed = list(r.get(key) or [])
    return listed if len(listed) == len(names) else [default] * len(names)


def _place_nodes(v: Views, parts: list[Row], t: Touched) -> None:
    """Give each node row the partitions of the configuration in force (a node's
    registration names the partitions of the configuration it registered under)."""
    members = [(str(p["name"]), None if p["nodes"] is None else frozenset(p["nodes"]))
               for p in parts]
    for name, row in v.nodes.items():
        placed = [part for part, listed in members if listed is None or name in listed]
        if row.get("partitions") != placed:
            row["partitions"] = placed
            t.nodes.add(name)
