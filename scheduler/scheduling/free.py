"""Which nodes can host a job now: the pass's scratch copy of the free resources.

A :class:`Free` is a scratch copy of the index's free resources for one scheduling pass: the
pass starts jobs on it, and ``evolve`` later applies the same starts to the real index. Which
of the nodes that fit a job gets is the topology plugin's choice (``flat`` when no topology is
configured; :mod:`scheduler.scheduling.placement`).
"""

from __future__ import annotations

import numpy as np

from scheduler.jobs.task_layout import spread_tasks
from scheduler.records import JobSpec
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

    def spread(self, slots: IntArray, spec: JobSpec,
               demand: Demand) -> list[tuple[int, int, int]] | None:
        """Each slot's share when ``-n`` tasks spread unevenly over the job's nodes, Slurm's
        way (:func:`~scheduler.jobs.task_layout.spread_tasks`: ``-N2 -n5`` on idle 4-CPU
        nodes takes 4 CPUs and 1); None when every node takes the demand's share (exclusive,
        ``--ntasks-per-node``, one node, no more tasks than nodes, or GPUs of the whole job:
        ``-G``/``--gpus-per-task`` GPUs are the demand's even share on each node, which 4 tasks
        of ``-N2 -n5 --gpus-per-task=1`` on 3 GPUs would overrun). A node's room is its free
        CPUs (and memory, with ``--mem-per-cpu``) now; each has at least the demand's."""
        count = len(slots)
        if (demand.exclusive or spec.ntasks_per_node > 0 or count < 2 or spec.ntasks <= count
                or spec.gpus > 0):
            return None
        per_task = max(spec.cpus_per_task, 1)
        rooms = [c // per_task for c in self.cpus[slots].tolist()]
        mem_per_task = max(spec.mem_per_cpu_mb, 0) * per_task
        if mem_per_task:
            mems = self.mem[slots].tolist()
            rooms = [min(r, m // mem_per_task) for r, m in zip(rooms, mems, strict=True)]
        tasks = spread_tasks(spec.ntasks, rooms)
        if len(set(tasks)) == 1 and tasks[0] * per_task == demand.cpus:
            return None  # the demand's share on every node after all
        per_node_mem = max(spec.mem_per_node_mb, 0)
        return [
            (t * per_task, max(per_node_mem, t * mem_per_task), demand.gpus) for t in tasks
        ]

    def take(self, slots: IntArray, demand: Demand,
             shares: list[tuple[int, int, int]] | None = None) -> list[tuple[int, int, int]]:
        """Occupy ``slots`` for a job; return what each slot gave (cpus, mem, gpus):
        ``shares`` when given (one per slot, :mod:`scheduler.jobs.task_layout`), else the
        demand's share on every slot (whole nodes when exclusive)."""
        index = self.index
        self.njobs[slots] += 1
        if shares is not None:
            taken = np.array(shares, dtype=np.int64).reshape(-1, 3)
            self.cpus[slots] -= taken[:, 0]
            self.mem[slots] -= taken[:, 1]
            self.gpus[slots] -= taken[:, 2]
            return shares
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
