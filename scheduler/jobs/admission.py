"""Admission: a submission's effective request, and whether it may be queued at all.

:func:`resolve` fills in the defaults a spec leaves open (partition, QOS, account, time limit,
per-node demand); :func:`check_submission` returns the first rule the spec breaks (a named
:class:`Rejection` and a detail sentence) or None. Both are pure functions of the spec, the
configuration and, for node-fit checks, the registered nodes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from scheduler.config.accounts import account_qos
from scheduler.config.cluster import ClusterConfig, PartitionConfig
from scheduler.jobs.demands import demand_of
from scheduler.jobs.node_filter import NodeFilter, NodeFilterError, node_filter, required_nodes
from scheduler.jobs.partition_list import check_each_partition, partition_names, tier_ordered
from scheduler.jobs.ranges import spec_range_problem
from scheduler.jobs.signal_names import parse_signal_spec
from scheduler.jobs.time_limits import max_wall_of, time_limit_of
from scheduler.records import JobSpec
from scheduler.records.fast_init import fast_init
from scheduler.shard.model import Demand, Node
from scheduler.shard.reasons import Rejection, RejectionReason

__all__ = [
    "Resolved",
    "check_submission",
    "demand_fits",
    "demand_of",
    "resolve",
    "spec_demand",
    "spec_filter",
    "time_limit_of",
]

NICE_LIMIT = 2_147_483_645
R = RejectionReason


@fast_init
@dataclass(frozen=True, slots=True)
class Resolved:
    """A spec with its defaults applied."""

    partition: str
    qos: str
    account: str
    time_limit_s: int
    demand: Demand


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


DEFAULT_QOS = "normal"
"""Slurm's default QOS (every association's ``DefaultQOS`` unless set otherwise)."""


def qos_of(spec: JobSpec, config: ClusterConfig) -> str:
    """The QOS a job is charged under: its ``--qos``, else ``normal`` when the configuration
    defines it (Slurm's default QOS), else none."""
    if spec.qos or config.qos_named(DEFAULT_QOS) is None:
        return spec.qos
    return DEFAULT_QOS


def _resolve(spec: JobSpec, config: ClusterConfig) -> Resolved:
    listed = partition_names(spec.partition) if "," in spec.partition else ()
    part = config.partition(listed[0] if listed else spec.partition)  # a list: its first's
    account = spec.account or config.account_of(spec.user)
    qos = qos_of(spec, config)
    max_wall = 0
    if spec.time_limit_s <= 0 and (part is None or not part.default_time_s):
        max_wall = max_wall_of(config, qos, account)
    return Resolved(
        partition=tier_ordered(listed, config) if listed else part.name if part else spec.partition,
        qos=qos,
        account=account,
        time_limit_s=time_limit_of(spec.time_limit_s, part, max_wall),
        demand=spec_demand(spec),
    )


def spec_demand(spec: JobSpec) -> Demand:
    """The per-node demand of a spec, Slurm's way: ``-w`` raises the node count to the nodes
    it names, ``--ntasks-per-node`` sets the tasks per node (at least ``-n`` spread over the
    nodes), ``--gpus`` (the job's total) is spread over the minimum node count, rounded up, and
    ``--mem-per-cpu`` times the node's CPUs is the node's memory when larger than ``--mem``."""
    nodes_min = max(spec.nodes_min, 1)
    if spec.nodelist:
        with contextlib.suppress(NodeFilterError):  # refused by check_submission
            nodes_min = max(nodes_min, required_nodes(spec.nodelist))
    tasks_per_node = max(spec.ntasks_per_node, -(-max(spec.ntasks, 1) // nodes_min))
    gpus = max(spec.gpus_per_node, -(-max(spec.gpus, 0) // nodes_min))
    cpus = tasks_per_node * max(spec.cpus_per_task, 1)
    mem = max(spec.mem_per_node_mb, max(spec.mem_per_cpu_mb, 0) * cpus)
    return demand_of(
        nodes_min,
        spec.nodes_max if spec.nodes_max <= 0 else max(spec.nodes_max, nodes_min),
        tasks_per_node * nodes_min,
        spec.cpus_per_task,
        gpus,
        spec.gpu_type,
        mem,
        spec.exclusive,
    )


def check_submission(
    spec: JobSpec, config: ClusterConfig, nodes: Iterable[Node]
) -> tuple[Rejection, str] | None:
    """The first admission rule ``spec`` breaks, with a detail sentence; None when admissible."""
    if spec.nodes_min < 1 or (spec.nodes_max and spec.nodes_max < spec.nodes_min):
        return R.INVALID_NODE_COUNT, f"nodes {spec.nodes_min}-{spec.nodes_max}"
    if spec.time_limit_s < 0:
        return R.INVALID_TIME_LIMIT, f"time limit {spec.time_limit_s} s"
    if min(spec.ntasks, spec.cpus_per_task, spec.gpus_per_node, spec.mem_per_node_mb,
           spec.gpus, spec.ntasks_per_node, spec.mem_per_cpu_mb) < 0:
        return R.INVALID_TASKS, "a task, CPU, GPU or memory count is negative"
    if min(spec.ntasks, spec.cpus_per_task) < 1:
        return R.INVALID_TASKS, f"ntasks {spec.ntasks}, cpus_per_task {spec.cpus_per_task}"
    if not spec.script and (not spec.command or not any(spec.command)):
        return R.EMPTY_COMMAND, "command is empty"  # a batch script is the command itself
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
    if spec.signal and parse_signal_spec(spec.signal) is None:
        return R.INVALID_SIGNAL, f"--signal {spec.signal[:40]!r}"
    out_of_range = spec_range_problem(spec)
    if out_of_range is not None:
        return out_of_range
    if "," in spec.partition:  # -p a,b: one of them admits it (scheduler/jobs/partition_list)
        return check_each_partition(spec, config, lambda one: check_submission(one, config, nodes))
    part = config.partition(spec.partition)
    if part is None:
        return R.INVALID_PARTITION, f"partition {spec.partition or '(default)'} does not exist"
    if part.state in ("DRAIN", "INACTIVE"):
        return R.PARTITION_NOT_AVAILABLE, f"partition {part.name} is {part.state}"
    if spec.qos and config.qos_named(spec.qos) is None:
        return R.INVALID_QOS, f"QOS {spec.qos} does not exist"
    allowed, qos = part.allow_qos, qos_of(spec, config)
    if allowed and "ALL" not in allowed and qos not in allowed:
        return R.INVALID_QOS, f"partition {part.name} does not allow QOS {qos or '(none)'}"
    problem = _check_account(spec, config) or _check_account_qos(spec, config, qos)
    if problem is not None:
        return problem
    try:
        wanted = spec_filter(spec)
    except NodeFilterError as error:
        reason = R.INVALID_FEATURE if "constraint" in str(error) else R.INVALID_NODE_NAME
        return reason, str(error)
    return _check_fit(resolve(spec, config).demand, wanted, part, config, nodes)


def demand_fits(demand: Demand, wanted: NodeFilter, part: PartitionConfig,
                config: ClusterConfig, nodes: Iterable[Node]) -> bool:
    """Whether some set of the partition's nodes could ever hold ``demand`` (the fit rule of
    :func:`check_submission`; :mod:`scheduler.jobs.node_count` picks node counts with it)."""
    return _check_fit(demand, wanted, part, config, nodes) is None


def spec_filter(spec: JobSpec) -> NodeFilter:
    """The node restrictions of a spec (raises NodeFilterError when one does not parse)."""
    return node_filter(spec.constraint, spec.nodelist, spec.exclude)


def _check_account(spec: JobSpec, config: ClusterConfig) -> tuple[Rejection, str] | None:
    """With accounts configured, a named account must exist and list the job's user (Slurm's
    association: ``Invalid account or account/partition combination specified``); an account
    that lists no user admits no one, as Slurm's without an association (it was open to all:
    a user moving between such accounts started each with no usage and ranked first in each
    Fair Tree); root too, as Slurm's root has only the associations it is given. A user no
    account lists runs under root by naming none (``-A root`` would charge a second
    association, ``user:root:USER`` beside ``user::USER``, to split its usage). Without
    accounts (no accounting) any account is recorded."""
    if not spec.account or not config.accounts:
        return None
    account = next((a for a in config.accounts if a.name == spec.account), None)
    if account is None:
        return R.INVALID_ACCOUNT, f"account {spec.account} does not exist"
    if spec.user in account.users:
        return None
    return R.INVALID_ACCOUNT, f"user {spec.user} has no association with account {spec.account}"


def _check_account_qos(spec: JobSpec, config: ClusterConfig, qos: str
                       ) -> tuple[Rejection, str] | None:
    """With accounts configured, a job's QOS must be in its account's QOS list (inherited;
    Slurm's association QOS; ``normal`` alone where no account of the path sets one): else
    anyone names any QOS, its priority and ``UsageFactor`` (0: usage not charged). Without
    accounts (no accounting, as Slurm without ``AccountingStorageEnforce=qos``) any QOS."""
    if not config.accounts or not qos:
        return None
    account = spec.account or config.account_of(spec.user)
    allowed = account_qos(config.accounts, account)
    if qos not in allowed:
        return R.INVALID_QOS, (f"QOS {qos} is not in account {account or 'root'}'s QOS list "
                               f"({','.join(allowed)})")
    return None


def _check_fit(
    demand: Demand,
    wanted: NodeFilter,
    part: PartitionConfig,
    config: ClusterConfig,
    nodes: Iterable[Node],
) -> tuple[Rejection, str] | None:
    """Could any set of the partition's nodes ever hold the job?

    The nodes are the configured ones when the configuration lists nodes (static knowledge),
    else the registered ones (dynamic nodes, in any state: a DOWN node may return). With
    neither, nodes may still join and nothing is refused (the job waits, ``Resources``).
    """
    if not config.nodes:
        return _fit_registered(demand, wanted, part, nodes)
    if _FITS.basis is not config:  # a configuration is immutable: its identity is its value
        _FITS.rebase(config)
    return _FITS.answer((part.name, demand, wanted),
                        lambda: _fit(demand, wanted, part, config))


_Fit = tuple[Rejection, str] | None


class _Memo:
    """Answers remembered while what they were computed from (their basis) stays the same;
    at most ``_MEMO_SIZE`` of them."""

    def __init__(self) -> None:
        self.basis: object = None
        self._answers: dict[object, _Fit] = {}

    def rebase(self, basis: object) -> None:
        self.basis, self._answers = basis, {}

    def answer(self, key: object, compute: Callable[[], _Fit]) -> _Fit:
        answers = self._answers
        try:
            return answers[key]  # (one lookup, and one hash of the key, when known)
        except KeyError:
            pass
        if len(answers) > _MEMO_SIZE:
            answers.clear()
        found = answers[key] = compute()
        return found


_MEMO_SIZE = 4096
_FITS = _Memo()  # basis: the ClusterConfig listing the nodes
_REGISTERED = _Memo()  # basis: the registered nodes (a tuple)


def _fit_registered(
    demand: Demand, wanted: NodeFilter, part: PartitionConfig, nodes: Iterable[Node]
) -> tuple[Rejection, str] | None:
    """:func:`_fit_registered_now`, remembered while the registered nodes stay the same.

    Every submission to a cluster of dynamic nodes asks this, and the answer costs arrays over
    every registered node (about 20 µs at 64 nodes, 0.2 ms at 1,000); the nodes change far
    more rarely than jobs arrive. The memo is kept with the nodes it was computed for and
    compared with the current ones (identical objects compare at once; a node's frozen values
    are all the answer depends on), so it answers exactly what a fresh computation would.
    """
    current = tuple(nodes)
    if _REGISTERED.basis != current:
        _REGISTERED.rebase(current)
    return _REGISTERED.answer((part, demand, wanted),
                              lambda: _fit_registered_now(demand, wanted, part, current))


def _fit_registered_now(
    demand: Demand, wanted: NodeFilter, part: PartitionConfig, nodes: Iterable[Node]
) -> tuple[Rejection, str] | None:
    members = [
        n
        for n in nodes
        if not n.superseded and (part.nodes is None or n.name in part.nodes)
    ]
    if not members:
        return None
    capacities = (
        np.array([n.cpus for n in members], dtype=np.int64),
        np.array([n.mem_mb for n in members], dtype=np.int64),
        np.array([n.gpus for n in members], dtype=np.int64),
        np.array([n.gpu_type for n in members], dtype=object),
    )
    names = [n.name for n in members]
    return _verdict(demand, wanted, part, capacities, names, [n.features for n in members])


def _fit(
    demand: Demand, wanted: NodeFilter, part: PartitionConfig, config: ClusterConfig
) -> tuple[Rejection, str] | None:
    capacities, names, features = _capacities(config, part)
    return _verdict(demand, wanted, part, capacities, names, features)


def _verdict(
    demand: Demand,
    wanted: NodeFilter,
    part: PartitionConfig,
    capacities: _Capacities,
    names: list[str],
    features: list[tuple[str, ...]],
) -> tuple[Rejection, str] | None:
    cpus, mem, gpus, types = capacities
    if wanted.only is not None:
        missing = sorted(wanted.only - set(names))
        if missing:
            return R.INVALID_NODE_NAME, (
                f"-w names {', '.join(missing[:5])}, not a node of partition {part.name}"
            )
    fit = (cpus >= demand.cpus) & (mem >= demand.mem_mb) & (gpus >= demand.gpus)
    if demand.gpu_type:
        fit &= types == demand.gpu_type
    if wanted.restricts:
        allowed = wanted.mask(names, features)
        if wanted.any_of and not (allowed | (wanted.only is not None)).any():
            return R.INVALID_FEATURE, f"no node of partition {part.name} has the features asked"
        fit &= allowed
    count = int(fit.sum())
    if not count:
        gpu_type = f" of type {demand.gpu_type}" if demand.gpu_type else ""
        detail = (
            f"no node of partition {part.name} has {demand.cpus} CPUs, {demand.mem_mb} MB"
            f" and {demand.gpus} GPU(s){gpu_type}"
            + (" among the nodes the job's options allow" if wanted.restricts else "")
        )
        return R.NODE_CONFIG_UNAVAILABLE, detail
    if count < demand.nodes_min:
        detail = f"{demand.nodes_min} nodes asked, partition {part.name} has {count} that fit"
        return R.NODE_COUNT_TOO_LARGE, detail
    return None


_Capacities = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
_Members = tuple[ClusterConfig, _Capacities, list[str], list[tuple[str, ...]]]
_CACHE: dict[tuple[int, str], _Members] = {}


def _capacities(
    config: ClusterConfig, part: PartitionConfig
) -> tuple[_Capacities, list[str], list[tuple[str, ...]]]:
    """Per configured node of ``part``: CPUs, memory, GPUs, GPU type (memoised per config),
    with the nodes' names and features."""
    key = (id(config), part.name)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is config:
        return hit[1], hit[2], hit[3]
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
    names, features = [n.name for n in members], [tuple(n.features) for n in members]
    _CACHE[key] = (config, arrays, names, features)
    return arrays, names, features
