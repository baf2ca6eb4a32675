"""Slurm's job, node and partition statistics, counted from the views' rows.

These are the counts slurmctld 25.11 keeps for its OpenMetrics endpoint (``statistics.c``),
re-derived from the ledger's views with the same rules:

- job base states and flags are counted independently, so one job can be in several counts
  (``running`` and ``started``; ``pending`` and ``hold``; ``failed`` and ``finished``);
- ``hold`` counts pending jobs whose reason is ``JobHeldUser`` or ``JobHeldAdmin``;
- allocation sums (CPUs, memory, GPUs, nodes) count only RUNNING and SUSPENDED jobs;
- ``jobs`` counts every job record; a partition's ``jobs`` only those not completed;
- a job whose requeue waits for its epilogs is PENDING + COMPLETING (``pending`` and
  ``completing``, not ``started`` nor ``finished``), as slurmctld's requeue leaves it; one
  requeued held by ``RequeueExitHold`` is PENDING + SPECIAL_EXIT with reason ``JobHeldUser``
  (``pending`` and ``hold``: slurmctld has no count for SPECIAL_EXIT);
- a node's base state is one of future, down, mixed, allocated, idle, unknown (MIXED inferred
  from the CPUs allocated to running jobs, as slurmctld does, from the node's service state);
  its flags (DRAIN, COMPLETING…) are counted apart: a node that only a requeue's epilog wait
  holds is idle + completing (slurmctld has freed its CPUs; the node rows show it allocated
  because the core gives it no new work until the epilog is in);
- slurmctld forgets an ended job ``MinJobAge`` (300 s, or the views' ``SLUICE_MIN_JOB_AGE``)
  after it ended; so do these counts, measured against the views' own clock (the time of the
  newest fact), never the wall clock. The views drop such a job from memory by the same rule
  (``projections.retention``), so the counts need no row the views no longer hold.

Allocations are what the core allocated, per node, as ``JobStarted`` records them (the job
rows' ``alloc``; a run of a v1 ledger holds its spec as written, see ``projections.legacy``).
Rejected submissions never became jobs and are not counted. A node's free memory is its memory minus
what jobs hold (no daemon reports the operating system's free memory yet).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from projections.legacy import spec_alloc

__all__ = [
    "FINISHED",
    "JOB_COUNTS",
    "MIN_JOB_AGE_MS",
    "NODE_BASE",
    "NODE_FLAGS",
    "Alloc",
    "JobStats",
    "NodeStats",
    "PartitionStats",
    "job_stats",
    "node_stats",
    "partition_stats",
]

MIN_JOB_AGE_MS = 300_000
MIB = 1024 * 1024
FINISHED = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                      "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"})
HELD = frozenset({"JobHeldUser", "JobHeldAdmin"})

JOB_COUNTS: tuple[str, ...] = (
    "bootfail", "cancelled", "completed", "completing", "configuring", "deadline", "expediting",
    "failed", "fed_requeued", "finished", "hold", "node_failed", "outofmemory", "pending",
    "powerup_node", "preempted", "requeued", "resizing", "revoked", "running", "signaling",
    "stageout", "started", "suspended", "timeout",
)
"""The per-state job counts, in Slurm's metric-name spelling (``slurm_jobs_<name>``)."""

_BASE_COUNT = {"BOOT_FAIL": "bootfail", "CANCELLED": "cancelled", "COMPLETED": "completed",
               "DEADLINE": "deadline", "FAILED": "failed", "NODE_FAIL": "node_failed",
               "OUT_OF_MEMORY": "outofmemory", "PENDING": "pending", "PREEMPTED": "preempted",
               "RUNNING": "running", "SUSPENDED": "suspended", "TIMEOUT": "timeout"}
_FLAG_COUNT = {"COMPLETING": "completing", "CONFIGURING": "configuring",
               "EXPEDITING": "expediting", "REQUEUE_FED": "fed_requeued",
               "POWER_UP_NODE": "powerup_node", "REQUEUED": "requeued", "RESIZING": "resizing",
               "REVOKED": "revoked", "SIGNALING": "signaling", "STAGE_OUT": "stageout"}

NODE_BASE: tuple[str, ...] = ("alloc", "down", "future", "idle", "mixed", "unknown")
NODE_FLAGS: tuple[str, ...] = (
    "blocked", "completing", "cloud", "drain", "drained", "draining", "dyn_future", "dyn_normal",
    "external", "fail", "invalid_reg", "maint", "noresp", "planned", "power_down", "power_up",
    "powered_down", "powering_down", "powering_up", "reboot_issued", "reboot_req", "resv",
)
"""Node flag counts (``slurm_nodes_<name>``; partitions spell a few differently)."""

_NODE_FLAG = {"BLOCKED": "blocked", "COMPLETING": "completing", "CLOUD": "cloud",
              "DYNAMIC_FUTURE": "dyn_future", "DYNAMIC_NORM": "dyn_normal",
              "EXTERNAL": "external", "FAIL": "fail", "INVALID_REG": "invalid_reg",
              "MAINT": "maint", "NOT_RESPONDING": "noresp", "NO_RESPOND": "noresp",
              "PLANNED": "planned", "POWER_DOWN": "power_down", "POWER_UP": "power_up",
              "POWERED_DOWN": "powered_down", "POWERING_DOWN": "powering_down",
              "POWERING_UP": "powering_up", "REBOOT_ISSUED": "reboot_issued",
              "REBOOT_REQUESTED": "reboot_req", "RESERVED": "resv", "RES": "resv"}


@dataclass(frozen=True, slots=True)
class Alloc:
    """What one running job holds on each of its nodes."""

    cpus: int
    mem_bytes: int
    gpus: int


@dataclass
class JobStats:
    """Counts over a set of jobs (the cluster, a partition, a user or an account)."""

    counts: Counter[str] = field(default_factory=Counter)
    jobs: int = 0
    not_completed: int = 0
    cpus_alloc: int = 0
    memory_alloc: int = 0
    gpus_alloc: int = 0
    nodes: set[str] = field(default_factory=set)
    max_job_nodes: int = 0
    min_job_nodes: int = 0
    max_job_nodes_nohold: int = 0
    min_job_nodes_nohold: int = 0
    wait_part_node_limit: int = 0

    @property
    def nodes_alloc(self) -> int:
        """Distinct nodes held by running or suspended jobs."""
        return len(self.nodes)


@dataclass
class NodeStats:
    """One node's resources and state, as slurmctld reports them."""

    name: str
    partitions: tuple[str, ...]
    block: str
    base: str
    flags: frozenset[str]
    cpus: int
    cpus_alloc: int
    gpus: int
    gpus_alloc: int
    mem_bytes: int
    mem_alloc_bytes: int

    @property
    def cpus_idle(self) -> int:
        """Effective CPUs not allocated (no CPUs are reserved for the system)."""
        return max(self.cpus - self.cpus_alloc, 0)

    @property
    def mem_free_bytes(self) -> int:
        """Memory no job holds."""
        return max(self.mem_bytes - self.mem_alloc_bytes, 0)


@dataclass
class PartitionStats:
    """One partition: its jobs and its nodes."""

    name: str
    jobs: JobStats = field(default_factory=JobStats)
    nodes: list[NodeStats] = field(default_factory=list)

    def node_count(self, what: str) -> int:
        """Nodes of this partition with base state or flag ``what``."""
        return sum(1 for n in self.nodes if n.base == what or what in n.flags)


Row = Mapping[str, Any]


def visible_jobs(jobs: Iterable[Row], now_ms: int,
                 min_job_age_ms: int = MIN_JOB_AGE_MS) -> list[Row]:
    """The job records slurmctld would still hold: not rejected, ended less than MinJobAge ago."""
    return [
        row for row in jobs
        if row.get("state") != "REJECTED"
        and not (row.get("state") in FINISHED and row.get("end_ms", 0) + min_job_age_ms < now_ms)
    ]


def job_alloc(job: Row, name: str, node: Row | None) -> Alloc:
    """What ``job`` holds on node ``name``: its run's allocation there."""
    share = job.get("alloc", {}).get(name)
    cpus, mem_mb, gpus = share if share is not None else spec_alloc(job, node)
    return Alloc(int(cpus), int(mem_mb) * MIB, int(gpus))


def _holds_nodes(job: Row) -> bool:
    return job.get("state") in ("RUNNING", "SUSPENDED")


def add_job(stats: JobStats, job: Row, nodes: Mapping[str, Row]) -> None:
    """Count one job into ``stats`` (Slurm's ``_fill_jobs_statistics`` rules)."""
    state, flags = job.get("state", ""), set(job.get("flags", []))
    counts = stats.counts
    if state in _BASE_COUNT:
        counts[_BASE_COUNT[state]] += 1
    if state == "REQUEUED":
        counts["requeued"] += 1
    for flag in flags:
        if flag in _FLAG_COUNT:
            counts[_FLAG_COUNT[flag]] += 1
    if state == "PENDING":
        held = job.get("reason") in HELD
        if held:
            counts["hold"] += 1
        min_nodes = int(job.get("nodes_min", 1))
        max_nodes = max(int(job.get("nodes_max", 0)), min_nodes)
        stats.max_job_nodes = max(stats.max_job_nodes, max_nodes)
        stats.min_job_nodes = max(stats.min_job_nodes, min_nodes)
        if not held:
            stats.max_job_nodes_nohold = max(stats.max_job_nodes_nohold, max_nodes)
            stats.min_job_nodes_nohold = max(stats.min_job_nodes_nohold, min_nodes)
        if job.get("reason") == "PartitionNodeLimit":
            stats.wait_part_node_limit += 1
    else:
        counts["started"] += 1  # IS_JOB_STARTED: any base state after PENDING
    if state in FINISHED:
        counts["finished"] += 1
    stats.jobs += 1
    if not (state in FINISHED and "COMPLETING" not in flags):
        stats.not_completed += 1
    if _holds_nodes(job):
        for name in job.get("nodes", []):
            alloc = job_alloc(job, name, nodes.get(name))
            stats.cpus_alloc += alloc.cpus
            stats.memory_alloc += alloc.mem_bytes
            stats.gpus_alloc += alloc.gpus
            stats.nodes.add(name)


def job_stats(jobs: Iterable[Row], nodes: Mapping[str, Row]) -> JobStats:
    """Counts over ``jobs`` (already filtered with :func:`visible_jobs`)."""
    stats = JobStats()
    for job in jobs:
        add_job(stats, job, nodes)
    return stats


def node_stats(nodes: Mapping[str, Row], jobs_by_id: Mapping[int, Row]) -> list[NodeStats]:
    """Every node's resources, allocation, base state and flags, sorted by name."""
    out = []
    for name in sorted(nodes):
        row = nodes[name]
        holders = [jobs_by_id[j] for j in row.get("jobs", []) if j in jobs_by_id]
        allocs = [job_alloc(job, name, row) for job in holders if _holds_nodes(job)]
        cpus = int(row.get("cpus", 0))
        cpus_alloc = min(sum(a.cpus for a in allocs), cpus)
        completing = any("COMPLETING" in job.get("flags", []) for job in holders)
        shown = str(row.get("service") or row.get("state", "UNKNOWN"))
        shown += "+NO_RESPOND" if row.get("suspect") else ""  # NodeSuspected
        base, flags = _node_state(shown, cpus, cpus_alloc, completing)
        out.append(NodeStats(
            name=name, partitions=tuple(row.get("partitions", [])), block=row.get("block", ""),
            base=base, flags=flags, cpus=cpus, cpus_alloc=cpus_alloc,
            gpus=int(row.get("gpus", 0)),
            gpus_alloc=min(sum(a.gpus for a in allocs), int(row.get("gpus", 0))),
            mem_bytes=int(row.get("mem_mb", 0)) * MIB,
            mem_alloc_bytes=sum(a.mem_bytes for a in allocs),
        ))
    return out


def _node_state(state: str, cpus: int, cpus_alloc: int,
                completing: bool) -> tuple[str, frozenset[str]]:
    tokens = {t for t in state.replace("|", "+").split("+") if t}
    flags = {_NODE_FLAG[t] for t in tokens if t in _NODE_FLAG}
    if completing:
        flags.add("completing")
    if "FUTURE" in tokens:
        base = "future"
    elif tokens & {"DOWN", "INVALID_REG"}:
        base = "down"
    elif 0 < cpus_alloc < cpus or "MIXED" in tokens:
        base = "mixed"
    elif (cpus_alloc and cpus_alloc >= cpus) or "ALLOCATED" in tokens:
        base = "alloc"
    elif tokens & {"IDLE", "DRAIN", "DRAINED", "DRAINING"}:
        base = "idle"
    else:
        base = "unknown"
    if tokens & {"DRAIN", "DRAINED", "DRAINING"}:
        busy = base in ("alloc", "mixed") or "completing" in flags
        flags.add("draining" if busy else "drain")
        if not busy:
            flags.add("drained")
    return base, frozenset(flags)


def partition_stats(
    jobs: Iterable[Row], nodes: list[NodeStats], all_nodes: Mapping[str, Row]
) -> list[PartitionStats]:
    """One entry per partition named by a node or a job, sorted by name."""
    parts: dict[str, PartitionStats] = {}
    for node in nodes:
        for name in node.partitions:
            parts.setdefault(name, PartitionStats(name)).nodes.append(node)
    for job in jobs:
        name = str(job.get("partition", ""))
        if name:
            add_job(parts.setdefault(name, PartitionStats(name)).jobs, job, all_nodes)
    return [parts[name] for name in sorted(parts)]
