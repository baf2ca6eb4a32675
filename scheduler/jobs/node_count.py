"""The node count of a job that gave none (no ``-N``) or a range (``-N 1-3``): decided at admission.

Slurm derives the node count from the tasks when ``-N`` is not given: ``sbatch -n 16`` on
4-CPU nodes gets 4 nodes. Sluice's demand is the same on every node of a job (``ceil(ntasks /
nodes_min) x cpus_per_task`` CPUs, :func:`scheduler.jobs.admission.spec_demand`), so the count
decides what each node must give. :func:`with_node_count` picks it when admission receives the
submission (``SubmitJob``, ``TestSubmitJob``, an ``UpdateJob`` of a pending job) and returns the
spec with that ``nodes_min``; the ``JobQueued`` carries it, so every later pass and a replay of
the ledger read the count decided then, never one recomputed from a cluster changed since.

The count is **the fewest nodes of the partition that could hold the job**: the smallest ``k``
for which admission's own fit rule (``_check_fit``: at least ``k`` nodes of the partition, among
those the job's ``-w``/``-x``/``-C`` allow, each with the CPUs, memory and GPUs the spec asks per
node when spread over ``k``) accepts the spec. On a homogeneous partition that is Slurm's count,
``ceil(ntasks / floor(cpus_per_node / cpus_per_task))``; on a mixed one it counts the largest
nodes first (a count is accepted as soon as enough nodes are large enough for it), so the job
waits for the fewest, largest nodes rather than for many small ones.

- no ``-N``: the spec's default, ``nodes_min`` 1 and ``nodes_max`` 0 (the CLI sends ``-N 1`` as
  1-1, so that it stays exact). 1 when the job fits on one node (what it got before: such a job
  is unchanged), else the fewest ``k`` of at least ``ceil(ntasks / ntasks_per_node)`` with
  ``--ntasks-per-node`` (its meaning kept: at most that many tasks on a node) and the nodes
  ``-w`` names, and at most ``ntasks`` (a node holds a task at least; Slurm lowers ``-N`` to
  ``-n`` too); with ``--segment`` a multiple of the segment size (or at most one segment).
- a range ``-N MIN-MAX``: MIN when it fits (the job is unchanged), else the fewest ``k`` up to
  MAX, with the same lower bounds. An exact ``-N`` is never changed (Slurm refuses ``-N 1 -n 5``
  on 4-CPU nodes too).

When no count fits, the spec gets the least count the CPUs allow (``ceil(ntasks x
cpus_per_task / largest node)``, within the bounds) and admission refuses it with its usual
reason (``NodeCountTooLarge`` when too few nodes fit, ``RequestedNodeConfigUnavailable`` when
none does). Invalid counts, partitions or node options are left as given, for admission to
refuse; with no node known (dynamic nodes, none registered yet) admission refuses nothing and
the given count stands.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

from scheduler.config.cluster import ClusterConfig, PartitionConfig
from scheduler.jobs.admission import demand_fits, spec_demand, spec_filter
from scheduler.jobs.node_filter import NodeFilterError, required_nodes
from scheduler.jobs.partition_list import first_partition
from scheduler.records import JobSpec
from scheduler.shard.model import Node

__all__ = ["asks_node_count", "same_submission", "with_node_count"]


def asks_node_count(spec: JobSpec) -> bool:
    """True when admission decides the spec's node count: no ``-N`` (the spec's default,
    ``nodes_min`` 1 and ``nodes_max`` 0) or a range (``nodes_max`` above ``nodes_min``)."""
    return spec.nodes_min >= 1 and (spec.nodes_max > spec.nodes_min or (
        spec.nodes_min == 1 and spec.nodes_max == 0))


def same_submission(queued: JobSpec, submitted: JobSpec) -> bool:
    """Whether ``queued`` (a JobQueued's spec) is what admission made of ``submitted``: equal,
    or equal but for the node count admission decided."""
    if queued == submitted:
        return True
    return asks_node_count(submitted) and (
        replace(queued, nodes_min=submitted.nodes_min) == submitted)


def with_node_count(spec: JobSpec, config: ClusterConfig, nodes: Collection[Node]) -> JobSpec:
    """``spec`` with the node count admission decides for it (see the module docstring); the
    same object when it asks none, or when its minimum fits."""
    if not asks_node_count(spec):
        return spec
    counts = _bounds(spec)
    if counts is None or counts[1] <= spec.nodes_min:
        return spec  # no other count to choose (one task), or counts admission refuses
    part = config.partition(first_partition(spec.partition))  # -p a,b: counted in a
    if part is None:
        return spec  # refused by check_submission
    try:
        wanted = spec_filter(spec)
    except NodeFilterError:  # refused by check_submission
        return spec
    if demand_fits(spec_demand(spec), wanted, part, config, nodes):
        return spec  # a job that fits as asked keeps its count
    sizes = _cpu_sizes(part, config, nodes)
    if not sizes:
        return spec
    low, high = counts
    least = min(max(low, -(-spec.ntasks * spec.cpus_per_task // max(sizes[0], 1))), high)
    for count in range(least, min(high, len(sizes), least + _MAX_TRIES - 1) + 1):
        if spec.segment and count > spec.segment and count % spec.segment:
            continue  # --segment: the job's node count is a multiple of the segment size
        candidate = replace(spec, nodes_min=count)
        if demand_fits(spec_demand(candidate), wanted, part, config, nodes):
            return candidate
    return spec if least == spec.nodes_min else replace(spec, nodes_min=least)


_MAX_TRIES = 128
"""Counts tried from the least the CPUs allow, at most: each is a fit check over the
partition's nodes, and a submission whose memory or GPUs fit no count would otherwise try one
count per node of the partition (a user's request costing the shard seconds on a large one);
a job that needs more than this many nodes beyond the least is refused with the least, as
when none fits."""


def _bounds(spec: JobSpec) -> tuple[int, int] | None:
    """The counts admission may choose from when the given minimum does not fit (lowest,
    highest): from the minimum, at least the nodes ``--ntasks-per-node`` needs for ``-n``
    and those ``-w`` names; up to the range's maximum, or ``-n`` without ``-N``. None when the
    spec's counts are invalid (check_submission refuses them) or leave no choice."""
    if min(spec.ntasks, spec.cpus_per_task) < 1:
        return None
    low = spec.nodes_min
    if spec.ntasks_per_node > 0:
        low = max(low, -(-spec.ntasks // spec.ntasks_per_node))
    if spec.nodelist:
        try:
            low = max(low, required_nodes(spec.nodelist))
        except NodeFilterError:
            return None
    high = spec.nodes_max if spec.nodes_max > spec.nodes_min else max(spec.ntasks, low)
    return (low, high) if low <= high else None


def _cpu_sizes(part: PartitionConfig, config: ClusterConfig, nodes: Collection[Node]) -> list[int]:
    """The CPUs of the partition's nodes, largest first: the configured nodes when the
    configuration lists nodes, else the registered ones (as admission's fit check)."""
    members = None if part.nodes is None else frozenset(part.nodes)
    if config.nodes:
        cpus = [n.cpus for n in config.nodes if members is None or n.name in members]
    else:
        cpus = [n.cpus for n in nodes
                if not n.superseded and (members is None or n.name in members)]
    return sorted(cpus, reverse=True)
