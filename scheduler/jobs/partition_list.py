"""A job submitted to several partitions (``sbatch -p a,b``), Slurm's way (pure).

The job is admitted when one of its partitions admits it (every name must exist); while it
waits its partition is the list, ordered by ``PriorityTier`` (highest first, as slurmctld
rebuilds it), and the main pass tries each partition in that order and starts it in the first
where it can start (:mod:`scheduler.scheduling.partition_choice`); the ``JobStarted`` names
that partition, which the job keeps while it runs; requeued (not expedited), it waits
under the list again (:mod:`scheduler.requeue.evolve`). A list is ordered by its best partition's
``PriorityTier`` and ``PriorityJobFactor``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TypeVar

from scheduler.config.cluster import ClusterConfig
from scheduler.records import JobSpec
from scheduler.shard.reasons import Rejection, RejectionReason

__all__ = ["best_of", "check_each_partition", "first_partition", "partition_names",
           "tier_ordered"]

V = TypeVar("V", int, float)
Problem = tuple[Rejection, str] | None


def partition_names(text: str) -> tuple[str, ...]:
    """The names of a comma-separated list, blanks and repeats dropped, in order."""
    names: list[str] = []
    for word in text.split(","):
        name = word.strip()
        if name and name not in names:
            names.append(name)
    return tuple(names)


def first_partition(text: str) -> str:
    """The first partition of a list ("" stays the default partition)."""
    return text.split(",", 1)[0].strip() if "," in text else text


def tier_ordered(names: tuple[str, ...], config: ClusterConfig) -> str:
    """The list as the job keeps it: highest ``PriorityTier`` first, else in the given order."""
    tiers = {p.name: p.priority_tier for p in config.partitions}
    return ",".join(sorted(names, key=lambda name: -tiers.get(name, 0)))


def best_of(values: Mapping[str, V], partition: str, default: V) -> V:
    """``values[partition]``; for a list, the best of its partitions' values."""
    if "," not in partition:
        return values.get(partition, default)
    return max(values.get(name, default) for name in partition.split(","))


def check_each_partition(spec: JobSpec, config: ClusterConfig,
                         check: Callable[[JobSpec], Problem]) -> Problem:
    """A listed spec's admission: every name must be a partition (Slurm refuses the job
    otherwise); then the first partition that admits it admits it, else the first refusal."""
    names = partition_names(spec.partition)
    unknown = [name for name in names if config.partition(name) is None]
    if unknown or not names:
        return (RejectionReason.INVALID_PARTITION,
                f"partition {unknown[0] if unknown else spec.partition!r} does not exist")
    first: Problem = None
    for name in names:
        problem = check(replace(spec, partition=name))
        if problem is None:
            return None
        first = first or problem
    return first
