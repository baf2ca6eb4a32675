"""Admission: a submission's effective request, and whether it may be queued at all.

:func:`resolve` fills in the defaults a spec leaves open (partition, QOS, account, time limit,
per-node demand); :func:`check_submission` returns the first rule the spec breaks (a named
:class:`Rejection` and a detail sentence) or None. Both are pure functions of the spec, the
configuration and, for node-fit checks, the registered nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from scheduler.assoc import assoc_table
from scheduler.config import ClusterConfig, PartitionConfig
from scheduler.model import Demand, Node
from scheduler.reasons import Rejection, RejectionReason
from scheduler.spec import JobSpec

__all__ = ["Resolved", "check_submission", "demand_of", "resolve", "time_limit_of"]

NICE_LIMIT = 2_147_483_645
R = RejectionReason


@dataclass(frozen=True, slots=True)
class Resolved:
    """A spec with its defaults applied."""

    partition: str
    qos: str
    account: str
    time_limit_s: int
    demand: Demand


def demand_of(
    spec_nodes_min: int,
    spec_nodes_max: int,
    ntasks: int,
    cpus_per_task: int,
    gpus: int,
    gpu_type: str,
    mem_mb: int,
    exclusive: bool,
) -> Demand:
    """Per-node demand: tasks are spread over the minimum node count, rounded up."""
    nodes_min = max(spec_nodes_min, 1)
    nodes_max = spec_nodes_max if spec_nodes_max > 0 else nodes_min
    tasks_per_node = max(1, -(-max(ntasks, 1) // nodes_min))
    return Demand(
        nodes_min=nodes_min,
        nodes_max=max(nodes_max, nodes_min),
        cpus=tasks_per_node * max(cpus_per_task, 1),
        mem_mb=max(mem_mb, 0),
        gpus=max(gpus, 0),
        gpu_type=gpu_type,
        exclusive=exclusive,
    )


def time_limit_of(requested_s: int, part: PartitionConfig | None, max_wall_s: int = 0) -> int:
    """The effective limit: the request, else DefaultTime, else the MaxWall that applies (at
    most MaxTime), else MaxTime, else 0 (none) — Slurm's order (``_set_time_limit``)."""
    if requested_s > 0:
        return requested_s
    if part is None:
        return max_wall_s
    if part.default_time_s:
        return part.default_time_s
    if max_wall_s:
        return min(max_wall_s, part.max_time_s) if part.max_time_s else max_wall_s
    return part.max_time_s


def _max_wall(config: ClusterConfig, qos_name: str, account: str) -> int:
    """The MaxWall on a job: its QOS's if set, else its association's (inherited), else 0."""
    qos = config.qos_named(qos_name) if qos_name else None
    if qos is not None and qos.max_wall_s:
        return qos.max_wall_s
    table = assoc_table(config)
    return table.limits(account, qos_name).max_wall_s if table is not None else 0


_RESOLVED: list[tuple[JobSpec | None, ClusterConfig | None, Resolved | None]] = [
    (None, None, None)
]


def resolve(spec: JobSpec, config: ClusterConfig) -> Resolved:
    """Apply the configuration's defaults to a spec (the last answer is kept: a submission is
    resolved by the checks of ``decide`` and again by ``evolve``, with the same objects)."""
    cached_spec, cached_config, resolved = _RESOLVED[0]
    if cached_spec is spec and cached_config is config and resolved is not None:
        return resolved
    resolved = _resolve(spec, config)
    _RESOLVED[0] = (spec, config, resolved)
    return resolved


def _resolve(spec: JobSpec, config: ClusterConfig) -> Resolved:
    part = config.partition(spec.partition)
    account = spec.account or config.account_of(spec.user)
    max_wall = 0
    if spec.time_limit_s <= 0 and (part is None or not part.default_time_s):
        max_wall = _max_wall(config, spec.qos, account)
    return Resolved(
        partition=part.name if part is not None else spec.partition,
        qos=spec.qos,
        account=account,
        time_limit_s=time_limit_of(spec.time_limit_s, part, max_wall),
        demand=demand_of(
            spec.nodes_min,
            spec.nodes_max,
            spec.ntasks,
            spec.cpus_per_task,
            spec.gpus_per_node,
            spec.gpu_type,
            spec.mem_per_node_mb,
            spec.exclusive,
        ),
    )


def check_submission(
    spec: JobSpec, config: ClusterConfig, nodes: Iterable[Node]
) -> tuple[Rejection, str] | None:
    """The first admission rule ``spec`` breaks, with a detail sentence; None when admissible."""
    if spec.nodes_min < 1 or (spec.nodes_max and spec.nodes_max < spec.nodes_min):
        return R.INVALID_NODE_COUNT, f"nodes {spec.nodes_min}-{spec.nodes_max}"
    if spec.time_limit_s < 0:
        return R.INVALID_TIME_LIMIT, f"time limit {spec.time_limit_s} s"
    if min(spec.ntasks, spec.cpus_per_task, spec.gpus_per_node, spec.mem_per_node_mb) < 0:
        return R.INVALID_TASKS, "a task, CPU, GPU or memory count is negative"
    if not spec.command or not any(spec.command):
        return R.EMPTY_COMMAND, "command is empty"
    if spec.begin_time_ms < 0:
        return R.INVALID_BEGIN_TIME, f"begin time {spec.begin_time_ms}"
    if spec.requeue not in ("", "yes", "no", "expedite"):
        return R.INVALID_REQUEUE, f"requeue {spec.requeue!r}"
    if spec.requeue == "expedite" and not config.requeue.expedited_requeue:
        return R.EXPEDITE_NOT_ENABLED, "SlurmctldParameters lacks enable_expedited_requeue"
    if spec.hot_swap not in ("", "yes", "no"):
        return R.INVALID_HOT_SWAP, f"hot_swap {spec.hot_swap!r}"
    if abs(spec.nice) > NICE_LIMIT:
        return R.INVALID_NICE, f"nice {spec.nice}"
    part = config.partition(spec.partition)
    if part is None:
        return R.INVALID_PARTITION, f"partition {spec.partition or '(default)'} does not exist"
    if part.state in ("DRAIN", "INACTIVE"):
        return R.PARTITION_NOT_AVAILABLE, f"partition {part.name} is {part.state}"
    if spec.qos and config.qos_named(spec.qos) is None:
        return R.INVALID_QOS, f"QOS {spec.qos} does not exist"
    allowed = part.allow_qos
    if allowed and "ALL" not in allowed and spec.qos not in allowed:
        return R.INVALID_QOS, f"partition {part.name} does not allow QOS {spec.qos or '(none)'}"
    if spec.account and config.accounts and spec.account not in {a.name for a in config.accounts}:
        return R.INVALID_ACCOUNT, f"account {spec.account} does not exist"
    return _check_fit(resolve(spec, config).demand, part, config, nodes)


def _check_fit(
    demand: Demand, part: PartitionConfig, config: ClusterConfig, nodes: Iterable[Node]
) -> tuple[Rejection, str] | None:
    """Could any set of the partition's configured nodes ever hold the job?

    Only a configuration that lists nodes is static knowledge; on the embedded default
    cluster nodes join at any time, so a job that does not fit yet waits (``Resources``).
    """
    del nodes  # dynamic nodes never cause a rejection; see the docstring
    if not config.nodes:
        return None
    memo = _FITS.get(id(config))
    if memo is None or memo[0] is not config:
        _FITS.clear()
        memo = _FITS[id(config)] = (config, {})
    key = (part.name, demand)
    if key not in memo[1]:
        if len(memo[1]) > 4096:
            memo[1].clear()
        memo[1][key] = _fit(demand, part, config)
    return memo[1][key]


_FITS: dict[int, tuple[ClusterConfig, dict[tuple[str, Demand], tuple[Rejection, str] | None]]] = {}


def _fit(
    demand: Demand, part: PartitionConfig, config: ClusterConfig
) -> tuple[Rejection, str] | None:
    cpus, mem, gpus, types = _capacities(config, part)
    fit = (cpus >= demand.cpus) & (mem >= demand.mem_mb) & (gpus >= demand.gpus)
    if demand.gpu_type:
        fit &= types == demand.gpu_type
    count = int(fit.sum())
    if not count:
        gpu_type = f" of type {demand.gpu_type}" if demand.gpu_type else ""
        detail = (
            f"no node of partition {part.name} has {demand.cpus} CPUs, {demand.mem_mb} MB"
            f" and {demand.gpus} GPU(s){gpu_type}"
        )
        return R.NODE_CONFIG_UNAVAILABLE, detail
    if count < demand.nodes_min:
        detail = f"{demand.nodes_min} nodes asked, partition {part.name} has {count} that fit"
        return R.NODE_COUNT_TOO_LARGE, detail
    return None


_Capacities = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
_CACHE: dict[tuple[int, str], tuple[ClusterConfig, _Capacities]] = {}


def _capacities(config: ClusterConfig, part: PartitionConfig) -> _Capacities:
    """Per configured node of ``part``: CPUs, memory, GPUs, GPU type (memoised per config)."""
    key = (id(config), part.name)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is config:
        return hit[1]
    wanted = None if part.nodes is None else set(part.nodes)
    members = [n for n in config.nodes if wanted is None or n.name in wanted]
    arrays = (
        np.array([n.cpus for n in members], dtype=np.int64),
        np.array([n.mem_mb for n in members], dtype=np.int64),
        np.array([n.gpus for n in members], dtype=np.int64),
        np.array([n.gpu_type for n in members], dtype=object),
    )
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[key] = (config, arrays)
    return arrays
