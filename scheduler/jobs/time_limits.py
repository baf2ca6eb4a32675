"""A job's effective time limit, Slurm's order (``_set_time_limit``) (pure)."""

from __future__ import annotations

from scheduler.config.cluster import ClusterConfig, PartitionConfig
from scheduler.scheduling.assoc import assoc_table

__all__ = ["max_wall_of", "time_limit_of"]


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


def max_wall_of(config: ClusterConfig, qos_name: str, account: str) -> int:
    """The MaxWall on a job: its QOS's if set, else its association's (inherited), else 0."""
    qos = config.qos_named(qos_name) if qos_name else None
    if qos is not None and qos.max_wall_s:
        return qos.max_wall_s
    table = assoc_table(config)
    return table.limits(account, qos_name).max_wall_s if table is not None else 0
