"""The named wire types nested in records: ``JobSpec`` (what a user asks for) and ``Segment``.

Field names, order and defaults follow docs/records.md exactly. Arrays are tuples and maps are
read-only mappings, so a spec is a value that can be shared between facts and jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["JobSpec", "Segment"]


def _empty_env() -> Mapping[str, str]:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    """One segment of an allocation: its index, the block/switch holding it, its nodes."""

    index: int
    group: str = ""
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSpec:
    """What a user asks for; Slurm's sbatch options in the comments."""

    name: str = ""  # -J
    user: str = ""
    account: str = ""  # -A
    partition: str = ""  # -p; "" = the default partition
    qos: str = ""  # -q
    nodes_min: int = 1  # -N min[-max]
    nodes_max: int = 0  # 0 = nodes_min
    ntasks: int = 1  # -n
    cpus_per_task: int = 1  # -c
    gpus_per_node: int = 0  # --gpus-per-node
    gpu_type: str = ""  # --gres=gpu:TYPE:N
    mem_per_node_mb: int = 0  # --mem; 0 = no memory request
    time_limit_s: int = 0  # -t; 0 = the partition's default
    exclusive: bool = False  # --exclusive
    command: tuple[str, ...] = ()
    workdir: str = ""  # -D
    env: Mapping[str, str] = field(default_factory=_empty_env)
    output: str = ""  # -o
    error: str = ""  # -e
    requeue: str = ""  # "", yes, no, expedite
    begin_time_ms: int = 0  # --begin
    dependency: str = ""  # -d
    nice: int = 0  # --nice
    hold: bool = False  # -H
    array: str = ""  # -a 0-15%4
    licenses: str = ""  # -L
    resources: str = ""  # --resources
    segment: int = 0  # --segment
    spread_segments: bool = False
    consolidate_segments: bool = False
    exclusive_topo: bool = False  # --exclusive=topo
    switches: int = 0  # --switches=N
    switches_max_wait_s: int = 0  # --switches=N@time
    hot_swap: str = ""  # "", yes, no
    comment: str = ""
