"""slurmctld 25.11's OpenMetrics families, with the same names, labels and help texts.

- ``/metrics/jobs``: ``slurm_jobs``, ``slurm_jobs_<state>``, ``slurm_jobs_<tres>_alloc``;
- ``/metrics/nodes``: per ``{node}`` ``slurm_node_cpus*``, ``slurm_node_gpus*``,
  ``slurm_node_memory*``; totals ``slurm_nodes`` and ``slurm_nodes_<state>``;
- ``/metrics/partitions``: ``slurm_partitions``; per ``{partition}`` ``slurm_partition_jobs*``,
  ``slurm_partition_nodes*`` and ``slurm_partition_{cpus,gpus,nodes}``;
- ``/metrics/jobs-users-accts``: ``slurm_user_jobs*{username}``, ``slurm_account_jobs*{account}``.

Every family is a gauge, as in Slurm, computed from the views when scraped (see
``projections.stats`` for the counting rules). Slurm's ``nodes_powering_up`` is fed from its
``powering_down`` counter (a bug); here it counts nodes powering up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from projections.exposition import Family, gauge
from projections.stats import (
    JOB_COUNTS,
    MIN_JOB_AGE_MS,
    JobStats,
    NodeStats,
    PartitionStats,
    job_stats,
    node_stats,
    partition_stats,
    visible_jobs,
)
from projections.views import Views

__all__ = ["Snapshot", "jobs_families", "nodes_families", "partitions_families",
           "snapshot", "users_accounts_families"]

_JOB_HELP = {
    "bootfail": "Number of jobs in BootFail state",
    "cancelled": "Number of jobs in Cancelled state",
    "completed": "Number of jobs in Completed state",
    "completing": "Number of jobs in Completing state",
    "configuring": "Number of jobs in Configuring state",
    "deadline": "Number of jobs in Deadline state",
    "expediting": "Number of jobs in Expediting state",
    "failed": "Number of jobs in Failed state",
    "fed_requeued": "Number of jobs requeued in a federation",
    "finished": "Number of finished jobs", "hold": "Number of jobs in Hold state",
    "node_failed": "Number of jobs in Node Failed state",
    "outofmemory": "Number of jobs in Out of Memory state",
    "pending": "Number of jobs in Pending state",
    "powerup_node": "Number of jobs in PowerUp Node state",
    "preempted": "Number of jobs in Preempted state",
    "requeued": "Number of jobs in Requeued state", "resizing": "Number of jobs in Resizing state",
    "revoked": "Number of jobs in Revoked state", "running": "Number of jobs in Running state",
    "signaling": "Number of jobs being signaled", "stageout": "Number of jobs in StageOut state",
    "started": "Number of started jobs", "suspended": "Number of jobs in Suspended state",
    "timeout": "Number of jobs in Timeout state",
}
_ALLOC_HELP = (
    ("cpus_alloc", "Total number of Cpus allocated by jobs"),
    ("memory_alloc", "Total memory bytes allocated by jobs"),
    ("gpus_alloc", "Total number of GPUs allocated by jobs"),
)
_NODE_TOTAL_HELP = {
    "alloc": "Number of nodes in Allocated state", "blocked": "Number of nodes in Blocked state",
    "completing": "Number of nodes with Completing flag", "cloud": "Number of Cloud nodes",
    "down": "Number of nodes in Down state", "drain": "Number of nodes with Drain flag",
    "drained": "Number of drained nodes",
    "draining": "Number of nodes in draining condition (Drain state with active jobs)",
    "dyn_future": "Number of future dynamic nodes", "dyn_normal": "Number of dynamic nodes",
    "external": "Number of external nodes", "fail": "Number of nodes with Fail flag",
    "future": "Number of nodes in Future state", "idle": "Number of nodes in Idle state",
    "invalid_reg": "Number of nodes with Invalid Registration flag",
    "maint": "Number of nodes with Maintenance flag", "mixed": "Number of nodes in Mixed state",
    "noresp": "Number of nodes with Not Responding flag",
    "planned": "Number of nodes with Planned flag",
    "power_down": "Number of nodes marked to be powered down",
    "power_up": "Number of nodes marked to be powered up",
    "powered_down": "Number of nodes powered down", "powering_up": "Number of nodes powering up",
    "reboot_issued": "Number of nodes with Reboot Issued flag",
    "reboot_req": "Number of nodes with Reboot Requested flag",
    "resv": "Number of nodes with Reserved flag", "unknown": "Number of nodes in Unknown state",
}
# Partition node metric name → (the node count it reads: base state or flag, Slurm's help text).
_PART_NODES = {
    "alloc": ("alloc", "Nodes allocated"), "blocked": ("blocked", "Nodes blocked"),
    "cg": ("completing", "Nodes in completing state"), "cloud": ("cloud", "Cloud nodes"),
    "down": ("down", "Nodes in Down state"), "drain": ("drain", "Nodes in Drain state"),
    "drained": ("drained", "Nodes in Drained state"),
    "draining": ("draining",
                 "Number of nodes in draining condition (Drain state with active jobs)"),
    "dyn_future": ("dyn_future", "Dynamic nodes in Future state"),
    "dyn_normal": ("dyn_normal", "Dynamic nodes"), "external": ("external", "External nodes"),
    "fail": ("fail", "Nodes in Fail state"), "future": ("future", "Nodes in Future state"),
    "idle": ("idle", "Nodes in Idle state"),
    "invalid_reg": ("invalid_reg", "Number of nodes with Invalid Registration flag"),
    "maint": ("maint", "Nodes in maintenance state"), "mixed": ("mixed", "Nodes in Mixed state"),
    "no_resp": ("noresp", "Nodes in Not Responding state"),
    "planned": ("planned", "Nodes in Planned state"),
    "power_down": ("power_down", "Nodes marked to Power Down"),
    "power_up": ("power_up", "Nodes marked to Power Up"),
    "powered_down": ("powered_down", "Powered down nodes"),
    "powering_down": ("powering_down", "Powering down nodes"),
    "powering_up": ("powering_up", "Powering up nodes"),
    "reboot_issued": ("reboot_issued", "Nodes which initiated reboot"),
    "reboot_requested": ("reboot_req", "Nodes with Reboot Requested flag"),
    "resv": ("resv", "Nodes with Reserved flag"), "unknown": ("unknown", "Nodes in Unknown state"),
}
Reader = tuple[str, str, Callable[[PartitionStats], int]]


class Snapshot:
    """What one scrape reads of the views, each part computed once (views or a snapshot can be
    passed to every ``*_families`` function)."""

    def __init__(self, views: Views) -> None:
        self.views = views
        self._visible: list[Mapping[str, Any]] | None = None
        self._nodes: list[NodeStats] | None = None

    @property
    def visible(self) -> list[Mapping[str, Any]]:
        """The job records slurmctld would still hold."""
        if self._visible is None:
            age = self.views.retention_ms
            self._visible = visible_jobs(self.views.jobs.values(), self.views.last_fact_ms,
                                         MIN_JOB_AGE_MS if age is None else age)
        return self._visible

    @property
    def nodes(self) -> list[NodeStats]:
        """Every node's allocation, base state and flags."""
        if self._nodes is None:
            holding = {row["job_id"]: row for row in self.views.jobs.values()
                       if row.get("job_id") and (row.get("state") in ("RUNNING", "SUSPENDED")
                                                 or row.get("flags"))}
            self._nodes = node_stats(self.views.nodes, holding)
        return self._nodes


def snapshot(source: Views | Snapshot) -> Snapshot:
    """``source`` as a snapshot (a snapshot is returned as it is)."""
    return source if isinstance(source, Snapshot) else Snapshot(source)


def _job_families(prefix: str, stats_by_label: list[tuple[tuple[tuple[str, str], ...],
                                                            JobStats]]) -> list[Family]:
    families = [Family(f"{prefix}jobs", "Total number of jobs")]
    for labels, stats in stats_by_label:
        families[0].add(stats.jobs, labels)
    for name in JOB_COUNTS:
        family = Family(f"{prefix}jobs_{name}", _JOB_HELP[name])
        for labels, stats in stats_by_label:
            family.add(stats.counts[name], labels)
        families.append(family)
    for name, help_text in _ALLOC_HELP:
        family = Family(f"{prefix}jobs_{name}", help_text)
        for labels, stats in stats_by_label:
            family.add(getattr(stats, name), labels)
        families.append(family)
    nodes = Family(f"{prefix}jobs_nodes_alloc", "Total number of nodes allocated by jobs")
    for labels, stats in stats_by_label:
        nodes.add(stats.nodes_alloc, labels)
    families.append(nodes)
    return families


def jobs_families(source: Views | Snapshot) -> list[Family]:
    """``/metrics/jobs``."""
    snap = snapshot(source)
    return _job_families("slurm_", [((), job_stats(snap.visible, snap.views.nodes))])


def users_accounts_families(source: Views | Snapshot) -> list[Family]:
    """``/metrics/jobs-users-accts``: the jobs families per user and per account."""
    snap = snapshot(source)
    views, jobs = snap.views, snap.visible
    out: list[Family] = []
    for prefix, key, label in (("user", "user", "username"), ("account", "account", "account")):
        groups: dict[str, list[Mapping[str, Any]]] = {}
        for job in jobs:
            if job.get(key):
                groups.setdefault(_label_value(str(job[key])), []).append(job)
        groups = _bounded(groups)
        out += _job_families(f"slurm_{prefix}_", [
            (((label, name),), job_stats(groups[name], views.nodes)) for name in sorted(groups)
        ])
    return out


MAX_LABELLED = 500
"""Users or accounts given series of their own, at most: those with the most jobs; the others'
jobs are summed under ``(other)``. Without accounting an account is any text a user writes:
red team, 2026-12-07, 2,300 made-up accounts of 1 kB grew this page to 70 MB (69,120 series),
and each scrape held the views for 0.45 s (every squeue and sbatch waited)."""
_LABEL_CHARS = 128
OTHER = "(other)"


def _label_value(name: str) -> str:
    return name if len(name) <= _LABEL_CHARS else name[:_LABEL_CHARS - 1] + "…"


def _bounded(groups: dict[str, list[Mapping[str, Any]]]) -> dict[str, list[Mapping[str, Any]]]:
    if len(groups) <= MAX_LABELLED:
        return groups
    ranked = sorted(groups, key=lambda name: (-len(groups[name]), name))
    kept = {name: groups[name] for name in ranked[:MAX_LABELLED - 1]}
    kept[OTHER] = [job for name in ranked[MAX_LABELLED - 1:] for job in groups[name]]
    return kept


def nodes_families(source: Views | Snapshot) -> list[Family]:
    """``/metrics/nodes``."""
    nodes = snapshot(source).nodes
    per_node: list[tuple[str, str, Any]] = [
        ("slurm_node_cpus", "Total number of cpus in the node", lambda n: n.cpus),
        ("slurm_node_cpus_alloc", "Allocated cpus in the node", lambda n: n.cpus_alloc),
        ("slurm_node_cpus_effective", "CPUs allocatable to jobs not reserved for system usage",
         lambda n: n.cpus),
        ("slurm_node_cpus_idle", "Idle cpus in the node", lambda n: n.cpus_idle),
        ("slurm_node_gpus", "Total number of GPUs in the node", lambda n: n.gpus),
        ("slurm_node_gpus_alloc", "Number of GPUs currently allocated by jobs on the node",
         lambda n: n.gpus_alloc),
        ("slurm_node_memory_alloc_bytes", "Bytes allocated to jobs in the node",
         lambda n: n.mem_alloc_bytes),
        ("slurm_node_memory_effective_bytes",
         "Memory allocatable to jobs not reserved for system usage", lambda n: n.mem_bytes),
        ("slurm_node_memory_free_bytes", "Free memory in bytes of the node",
         lambda n: n.mem_free_bytes),
        ("slurm_node_memory_bytes", "Total memory in bytes of the node", lambda n: n.mem_bytes),
    ]
    families = []
    for name, help_text, read in per_node:
        family = Family(name, help_text)
        for node in nodes:
            family.add(read(node), (("node", node.name),))
        families.append(family)
    families.append(gauge("slurm_nodes", "Total number of nodes", len(nodes)))
    for what in sorted(_NODE_TOTAL_HELP):
        count = sum(1 for n in nodes if n.base == what or what in n.flags)
        families.append(gauge(f"slurm_nodes_{what}", _NODE_TOTAL_HELP[what], count))
    return families


def partitions_families(source: Views | Snapshot) -> list[Family]:
    """``/metrics/partitions``."""
    snap = snapshot(source)
    parts = partition_stats(snap.visible, snap.nodes, snap.views.nodes)
    families = [gauge("slurm_partitions", "Total number of partitions", len(parts))]
    for name, help_text, read in _partition_readers():
        family = Family(f"slurm_partition_{name}", help_text)
        for part in parts:
            family.add(read(part), (("partition", part.name),))
        families.append(family)
    return families


def _job_count(name: str) -> Callable[[PartitionStats], int]:
    return lambda p: p.jobs.counts[name]


def _node_count(what: str) -> Callable[[PartitionStats], int]:
    return lambda p: p.node_count(what)


def _partition_readers() -> list[Reader]:
    readers: list[Reader] = [
        ("jobs", "Number of jobs in this partition", lambda p: p.jobs.not_completed),
    ]
    for name in JOB_COUNTS:
        readers.append((f"jobs_{name}", _JOB_HELP[name], _job_count(name)))
    readers += [
        ("jobs_cpus_alloc", "Total number of Cpus allocated by jobs", lambda p: p.jobs.cpus_alloc),
        ("jobs_gpus_alloc", "Total number of GPUs allocated by jobs", lambda p: p.jobs.gpus_alloc),
        ("jobs_memory_alloc", "Total memory bytes allocated by jobs",
         lambda p: p.jobs.memory_alloc),
        ("jobs_max_job_nodes", "Max of the max_nodes required of all pending jobs in that "
         "partition", lambda p: p.jobs.max_job_nodes),
        ("jobs_max_job_nodes_nohold", "Max of the max_nodes required of all pending jobs in that "
         "partition excluding Held jobs", lambda p: p.jobs.max_job_nodes_nohold),
        ("jobs_min_job_nodes", "Max of the min_nodes required of all pending jobs in that "
         "partition", lambda p: p.jobs.min_job_nodes),
        ("jobs_min_job_nodes_nohold", "Max of the min_nodes required of all pending jobs in that "
         "partition excluding Held jobs", lambda p: p.jobs.min_job_nodes_nohold),
        ("jobs_wait_part_node_limit", "Jobs wait partition node limit",
         lambda p: p.jobs.wait_part_node_limit),
    ]
    for name, (count, help_text) in _PART_NODES.items():
        readers.append((f"nodes_{name}", help_text, _node_count(count)))
    readers += [
        ("nodes_cpus_alloc", "Number of allocated cpus",
         lambda p: sum(n.cpus_alloc for n in p.nodes)),
        ("nodes_cpus_efctv", "Number of effective CPUs on all nodes, excludes CoreSpec",
         lambda p: sum(n.cpus for n in p.nodes)),
        ("nodes_cpus_idle", "Number of idle CPUs on all nodes",
         lambda p: sum(n.cpus_idle for n in p.nodes)),
        ("nodes_mem_alloc", "Amount of allocated memory of all nodes",
         lambda p: sum(n.mem_alloc_bytes for n in p.nodes)),
        ("nodes_mem_avail", "Amount of available memory of all nodes",
         lambda p: sum(n.mem_bytes for n in p.nodes)),
        ("nodes_mem_free", "Amount of free memory in all nodes",
         lambda p: sum(n.mem_free_bytes for n in p.nodes)),
        ("nodes_mem_tot", "Total amount of memory of all nodes",
         lambda p: sum(n.mem_bytes for n in p.nodes)),
        ("cpus", "Partition total cpus", lambda p: sum(n.cpus for n in p.nodes)),
        ("gpus", "Partition total gpus", lambda p: sum(n.gpus for n in p.nodes)),
        ("nodes", "Partition total nodes", lambda p: len(p.nodes)),
    ]
    return readers

