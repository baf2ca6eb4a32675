"""A job's per-node demand from the counts of its spec (:func:`demand_of`).

Equal counts give the same :class:`~scheduler.shard.model.Demand` object: a demand is a frozen
value, every submission asks for one, and a workload repeats few shapes (a bounded memo of a
pure function).
"""

from __future__ import annotations

from functools import lru_cache

from scheduler.shard.model import Demand

__all__ = ["demand_of"]


@lru_cache(maxsize=4096)
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
    """Per-node demand: tasks are spread over the minimum node count, rounded up (equal
    arguments give the same object: a frozen value, and a trace repeats few shapes)."""
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

