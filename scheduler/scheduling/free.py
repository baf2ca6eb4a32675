"""Which nodes can host a job now: the pass's scratch copy of the free resources.

A :class:`Free` is a scratch copy of the index's free resources for one scheduling pass: the
pass starts jobs on it, and ``evolve`` later applies the same starts to the real index. Which
of the nodes that fit a job gets is the topology plugin's choice (``flat`` when no topology is
configured; :mod:`scheduler.scheduling.placement`).
"""

from __future__ import annotations

import numpy as np

from scheduler.shard.index import BoolArray, IntArray, NodeIndex
from scheduler.shard.model import Demand

__all__ = ["Free"]


class Free:
    """Free CPUs, memory, GPUs and job counts per node slot, for one pass."""

    __slots__ = ("cpus", "gpus", "index", "mem", "njobs")

    def __init__(self, index: NodeIndex) -> None:
        self.index = index
        self.cpus: IntArray = index.free_cpus.copy()
        self.mem: IntArray = index.free_mem.copy()
        self.gpus: IntArray = index.free_gpus.copy()
        self.njobs: IntArray = index.njobs.copy()

    def eligible(self, demand: Demand, partition: BoolArray | None) -> BoolArray:
        """Usable slots of a partition whose capacity could ever host ``demand`` per node."""
        index = self.index
        if partition is None:
            return np.zeros(len(index), dtype=np.bool_)
        mask = index.usable & partition
        if demand.cpus > 1:
            mask &= index.cap_cpus >= demand.cpus
        if demand.mem_mb:
            mask &= index.cap_mem >= demand.mem_mb
        if demand.gpus:
            mask &= index.cap_gpus >= demand.gpus
        if demand.gpu_type:
            mask &= index.gpu_code == index.gpu_codes.get(demand.gpu_type, -1)
        result: BoolArray = mask
        return result

    def fits(self, demand: Demand, eligible: BoolArray) -> BoolArray:
        """Slots among ``eligible`` (see :meth:`eligible`) with room for ``demand`` now."""
        if demand.exclusive:
            result: BoolArray = eligible & (self.njobs == 0)
            return result
        mask = eligible & (self.cpus >= demand.cpus)
        if demand.mem_mb:
            mask &= self.mem >= demand.mem_mb
        if demand.gpus:
            mask &= self.gpus >= demand.gpus
        return mask

    def take(self, slots: IntArray, demand: Demand) -> list[tuple[int, int, int]]:
        """Occupy ``slots`` for a job; return what each slot gave (cpus, mem, gpus)."""
        index = self.index
        self.njobs[slots] += 1
        if not demand.exclusive:  # the same share on every node
            self.cpus[slots] -= demand.cpus
            if demand.mem_mb:
                self.mem[slots] -= demand.mem_mb
            if demand.gpus:
                self.gpus[slots] -= demand.gpus
            return [(demand.cpus, demand.mem_mb, demand.gpus)] * len(slots)
        cpus, mem, gpus = index.cap_cpus[slots], index.cap_mem[slots], index.cap_gpus[slots]
        self.cpus[slots] -= cpus
        self.mem[slots] -= mem
        self.gpus[slots] -= gpus
        return list(zip(cpus.tolist(), mem.tolist(), gpus.tolist(), strict=True))
