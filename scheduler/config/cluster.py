"""The cluster configuration: nodes, partitions, QOS, accounts, priority and scheduler knobs.

Parsed from YAML **text** (the core does no I/O) with Slurm's key names; every error names the
file, the line and the reason (:class:`ConfigError`). An empty text is the embedded default:
one partition ``main`` (default, all nodes, UP, no MaxTime), no QOS limits, no accounts, every
priority weight 0, backfill on. The format is documented in docs/configuration.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import yaml

from scheduler.config.accounts import build_accounts
from scheduler.config.auth import AuthConfig
from scheduler.config.health import build_health
from scheduler.config.model import (
    DAY_S,
    DEFAULT_CONFIG,
    AccountConfig,
    ClusterConfig,
    NodeConfig,
    PartitionConfig,
    PriorityConfig,
    QosConfig,
    SchedulerConfig,
)
from scheduler.config.requeue import REQUEUE_PARAMS, build_requeue, hot_swap_choice
from scheduler.config.values import (
    ConfigError,
    as_bool,
    as_choice,
    as_factor,
    as_int,
    as_mem_mb,
    as_str,
    as_str_list,
    as_time_s,
    parse_gres,
    parse_tres,
)
from scheduler.nodes.hostlist import HostlistError, expand_hostlist

__all__ = [
    "DEFAULT_CONFIG",
    "AccountConfig",
    "ClusterConfig",
    "ConfigError",
    "NodeConfig",
    "PartitionConfig",
    "PriorityConfig",
    "QosConfig",
    "SchedulerConfig",
    "parse_config",
]

T = TypeVar("T")


_Node = yaml.Node


def parse_config(text: str, source: str = "<config>") -> ClusterConfig:
    """Parse and validate a configuration text; raise :class:`ConfigError` naming the line."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        raise ConfigError(source, line, f"not valid YAML: {error}") from None
    if root is None:
        return DEFAULT_CONFIG
    top = _Mapping(root, source, "the top level")
    return _build_cluster(top, source)


class _Mapping:
    """A YAML mapping node read key by key, remembering lines and rejecting unknown keys."""

    def __init__(self, node: _Node, source: str, what: str) -> None:
        if not isinstance(node, yaml.MappingNode):
            raise ConfigError(source, node.start_mark.line + 1, f"{what} must be a mapping")
        self.source, self.line = source, node.start_mark.line + 1
        self.items: dict[str, _Node] = {}
        for key, value in node.value:
            name = str(key.value)
            if name in self.items:
                raise ConfigError(source, key.start_mark.line + 1, f"duplicate key {name!r}")
            self.items[name] = value
        self.used: set[str] = set()

    def get(self, key: str, convert: Callable[[Any, str], T], default: T) -> T:
        node = self.items.get(key)
        self.used.add(key)
        if node is None:
            return default
        try:
            return convert(_plain(node), key)
        except ValueError as error:
            raise ConfigError(self.source, node.start_mark.line + 1, str(error)) from None

    def node(self, key: str) -> _Node | None:
        self.used.add(key)
        return self.items.get(key)

    def finish(self, what: str) -> None:
        unknown = sorted(set(self.items) - self.used)
        if unknown:
            node = self.items[unknown[0]]
            raise ConfigError(
                self.source, node.start_mark.line + 1, f"unknown key {unknown[0]!r} in {what}"
            )


def _plain(node: _Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return node.value
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item) for item in node.value]
    return {str(k.value): _plain(v) for k, v in node.value}


def _entries(top: _Mapping, key: str) -> list[_Mapping]:
    node = top.node(key)
    if node is None:
        return []
    if not isinstance(node, yaml.SequenceNode):
        raise ConfigError(top.source, node.start_mark.line + 1, f"{key} must be a list")
    return [_Mapping(item, top.source, f"an entry of {key}") for item in node.value]


def _build_cluster(top: _Mapping, source: str) -> ClusterConfig:
    nodes = tuple(n for entry in _entries(top, "Nodes") for n in _build_nodes(entry))
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        dupe = next(n for n in names if names.count(n) > 1)
        raise ConfigError(source, top.line, f"node {dupe!r} is defined twice")
    partitions = tuple(_build_partition(e, frozenset(names)) for e in _entries(top, "Partitions"))
    qos = tuple(_build_qos(e) for e in _entries(top, "QOS"))
    accounts = build_accounts(_entries(top, "Accounts"))  # checked as a tree, with lines
    config = ClusterConfig(
        cluster_name=top.get("ClusterName", as_str, "sluice"),
        nodes=nodes,
        partitions=partitions or DEFAULT_CONFIG.partitions,
        qos=qos,
        accounts=accounts,
        licenses=top.get("Licenses", _as_licenses, ()),
        priority=_build_priority(top),
        scheduler=_build_scheduler(top),
        requeue=build_requeue(top, top.get("SchedulerParameters", _as_params, {})),
        health=build_health(top),
        auth=AuthConfig(
            required=top.get("AuthRequired", as_bool, False),
            administrators=top.get("Administrators", as_str_list, ()),
            node_names=top.get("AuthNodeNames", as_str_list, ()),
            node_users=top.get("NodeUsers", as_str_list, ()),
            submit_for=top.get("SubmitFor", _as_submit_for, ()),
        ),
    )
    top.finish("the top level")
    _check_cluster(config, top)
    return config


def _build_nodes(entry: _Mapping) -> list[NodeConfig]:
    name_text = entry.get("NodeName", as_str, "")
    if not name_text:
        raise ConfigError(entry.source, entry.line, "a node entry needs NodeName")
    try:
        names = expand_hostlist(name_text)
    except HostlistError as error:
        raise ConfigError(entry.source, entry.line, str(error)) from None
    gpus, gpu_type = entry.get("Gres", parse_gres, (0, ""))
    template = NodeConfig(
        name="",
        cpus=entry.get("CPUs", as_int(1), 1),
        mem_mb=entry.get("RealMemory", as_mem_mb, 0),
        gpus=gpus,
        gpu_type=gpu_type,
        features=entry.get("Features", as_str_list, ()),
        weight=entry.get("Weight", as_int(0), 1),
    )
    entry.finish(f"node {name_text}")
    return [NodeConfig(n, *_node_fields(template)) for n in names]


def _node_fields(node: NodeConfig) -> tuple[int, int, int, str, tuple[str, ...], int]:
    return (node.cpus, node.mem_mb, node.gpus, node.gpu_type, node.features, node.weight)


def _build_partition(entry: _Mapping, known: frozenset[str]) -> PartitionConfig:
    name = entry.get("PartitionName", as_str, "")
    if not name:
        raise ConfigError(entry.source, entry.line, "a partition entry needs PartitionName")
    nodes_text = entry.get("Nodes", as_str, "ALL")
    nodes: tuple[str, ...] | None = None
    if nodes_text.upper() != "ALL":
        try:
            nodes = expand_hostlist(nodes_text)
        except HostlistError as error:
            raise ConfigError(entry.source, entry.line, str(error)) from None
        missing = [n for n in nodes if n not in known]
        if missing:
            reason = f"partition {name} lists node {missing[0]!r}, which no NodeName defines"
            raise ConfigError(entry.source, entry.line, reason)
    part = PartitionConfig(
        name=name,
        nodes=nodes,
        default=entry.get("Default", as_bool, False),
        max_time_s=entry.get("MaxTime", as_time_s, 0),
        default_time_s=entry.get("DefaultTime", as_time_s, 0),
        max_nodes=entry.get("MaxNodes", as_int(0, unlimited=True), 0),
        priority_tier=entry.get("PriorityTier", as_int(0), 1),
        priority_job_factor=entry.get("PriorityJobFactor", as_int(0), 1),
        state=entry.get("State", as_choice("UP", "DOWN", "DRAIN", "INACTIVE"), "UP"),
        allow_qos=entry.get("AllowQos", as_str_list, ()),
        topology=entry.get("Topology", as_str, ""),
        hot_swap=entry.get("HotSwap", hot_swap_choice, ""),
    )
    entry.finish(f"partition {name}")
    return part


def _build_qos(entry: _Mapping) -> QosConfig:
    name = entry.get("Name", as_str, "")
    if not name:
        raise ConfigError(entry.source, entry.line, "a QOS entry needs Name")
    tres: dict[str, int] = entry.get("GrpTRES", parse_tres, {})
    qos = QosConfig(
        name=name,
        priority=entry.get("Priority", as_int(0), 0),
        max_wall_s=entry.get("MaxWall", as_time_s, 0),
        max_jobs_per_user=entry.get("MaxJobsPerUser", as_int(0, unlimited=True), 0),
        max_submit_jobs_per_user=entry.get("MaxSubmitJobsPerUser", as_int(0, unlimited=True), 0),
        grp_cpus=tres.get("cpu", 0),
        grp_mem_mb=tres.get("mem", 0),
        grp_gpus=tres.get("gres/gpu", 0),
        grp_nodes=tres.get("node", 0),
        usage_factor=entry.get("UsageFactor", as_factor, 1.0),
    )
    entry.finish(f"QOS {name}")
    return qos


def _build_priority(top: _Mapping) -> PriorityConfig:
    return PriorityConfig(
        weight_age=top.get("PriorityWeightAge", as_int(0), 0),
        weight_fairshare=top.get("PriorityWeightFairshare", as_int(0), 0),
        weight_job_size=top.get("PriorityWeightJobSize", as_int(0), 0),
        weight_partition=top.get("PriorityWeightPartition", as_int(0), 0),
        weight_qos=top.get("PriorityWeightQOS", as_int(0), 0),
        weight_assoc=top.get("PriorityWeightAssoc", as_int(0), 0),
        max_age_s=top.get("PriorityMaxAge", as_time_s, 7 * DAY_S),
        decay_half_life_s=top.get("PriorityDecayHalfLife", as_time_s, 7 * DAY_S),
        favor_small=top.get("PriorityFavorSmall", as_bool, False),
        calc_period_s=top.get("PriorityCalcPeriod", _as_calc_period, 300),
    )


def _as_calc_period(value: Any, key: str) -> int:
    """Slurm's ``PriorityCalcPeriod``: a time in whole minutes (rounded up), at least 1."""
    minutes = -(-as_time_s(value, key) // 60)
    if minutes < 1:
        raise ValueError(f"{key} must be at least 1 minute, not {value!r}")
    return minutes * 60


def _build_scheduler(top: _Mapping) -> SchedulerConfig:
    kind = top.get("SchedulerType", as_choice("sched/backfill", "sched/builtin"), "sched/backfill")
    params: dict[str, str] = top.get("SchedulerParameters", _as_params, {})
    defaults = SchedulerConfig()
    policy = "fcfs" if kind == "sched/builtin" else params.pop("bf_policy", defaults.policy)
    config = SchedulerConfig(
        policy=as_choice("fcfs", "easy", "conservative")(policy, "bf_policy"),
        bf_window_s=60 * _param(params, "bf_window", 1, 43_200, defaults.bf_window_s // 60),
        bf_resolution_s=_param(params, "bf_resolution", 1, 3600, defaults.bf_resolution_s),
        bf_max_job_test=_param(params, "bf_max_job_test", 1, 1_000_000, defaults.bf_max_job_test),
        bf_max_job_start=_param(params, "bf_max_job_start", 0, 10_000, 0),
        min_job_age_s=top.get("MinJobAge", as_int(0), defaults.min_job_age_s),
        dedupe_window_s=top.get("DedupeWindow", as_int(1), defaults.dedupe_window_s),
        dedupe_max_jobs=top.get("DedupeMaxJobs", as_int(1), defaults.dedupe_max_jobs),
        max_array_size=top.get("MaxArraySize", as_int(1), defaults.max_array_size),
        enforce_part_limits=top.get(
            "EnforcePartLimits",
            lambda v, k: as_choice("NO", "YES", "ALL", "ANY")(v, k) != "NO",
            False,
        ),
        operators=top.get("Operators", as_str_list, ()),
        fragmentation_aware=top.get(
            "TopologyFragmentationAware", as_bool, defaults.fragmentation_aware
        ),
    )
    for key in REQUEUE_PARAMS:  # read by build_requeue
        params.pop(key, None)
    if params:
        raise ConfigError(top.source, top.line, f"unknown SchedulerParameters {sorted(params)}")
    return config


def _as_licenses(value: Any, key: str) -> tuple[tuple[str, int], ...]:
    """``matlab:10,abaqus:5`` (or a list of those items) → ((name, count), ...)."""
    pools = []
    for item in as_str_list(value, key):
        name, _, count = item.partition(":")
        if not name:
            raise ValueError(f"{key}: {item!r} has no license name")
        pools.append((name, as_int(0)(count or "1", key)))
    names = [n for n, _ in pools]
    if len(set(names)) != len(names):
        raise ValueError(f"{key}: a license is listed twice")
    return tuple(pools)


def _as_submit_for(value: Any, key: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{submitter: [user or glob, ...]}`` → sorted ((submitter, globs), ...)."""
    if not isinstance(value, dict):
        raise ValueError(f"{key} must map a submitter to the users it may submit for")
    pairs = []
    for name, users in value.items():
        patterns = as_str_list(users, f"{key}: {name}")
        if not str(name).strip() or not patterns or not all(patterns):
            raise ValueError(f"{key}: {name!r} needs a submitter and a list of users")
        pairs.append((str(name).strip(), patterns))
    return tuple(sorted(pairs))


def _as_params(value: Any, key: str) -> dict[str, str]:
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    text = as_str(value, key)
    params = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, setting = item.partition("=")
        params[name.strip()] = setting.strip()
    return params


def _param(params: dict[str, str], key: str, low: int, high: int, default: int) -> int:
    if key not in params:
        return default
    value = as_int(low)(params.pop(key), key)
    if value > high:
        raise ValueError(f"{key} must be at most {high}, not {value}")
    return value


def _check_cluster(config: ClusterConfig, top: _Mapping) -> None:
    defaults = [p.name for p in config.partitions if p.default]
    if len(defaults) > 1:
        raise ConfigError(top.source, top.line, f"more than one default partition: {defaults}")
    names = [p.name for p in config.partitions]
    if len(set(names)) != len(names):
        raise ConfigError(top.source, top.line, "a partition name is used twice")
    qos_names = {q.name for q in config.qos}
    for part in config.partitions:
        for qos in part.allow_qos:
            if qos not in qos_names and qos.upper() != "ALL":
                raise ConfigError(
                    top.source, top.line, f"partition {part.name} allows unknown QOS {qos}"
                )
    for account in config.accounts:
        unknown = [q for q in account.qos if q not in qos_names]
        if unknown:
            raise ConfigError(top.source, top.line,
                              f"account {account.name} lists unknown QOS {unknown[0]}")
