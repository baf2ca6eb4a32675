"""Multifactor priority (Slurm's priority/multifactor) and the queue order.

    priority = W_age*age + W_fairshare*fairshare + W_jobsize*jobsize + W_partition*partition
             + W_qos*qos - nice,   clamped to [1, 2^32-1]; a held job's priority is 0;
    a priority an operator set (``scontrol update Priority=``, ``Job.admin_priority``) replaces it.

Every factor lies in [0, 1] (see docs/scheduling.md): ``age`` grows with the time since the job
became eligible (submission or begin time) up to ``PriorityMaxAge``; ``fairshare`` is the Fair
Tree rank (:mod:`scheduler.scheduling.fairshare`); ``jobsize`` favours large jobs (or small ones
with ``PriorityFavorSmall``); ``partition`` and ``qos`` are the job's partition
``PriorityJobFactor`` and QOS ``Priority`` normalised by the largest configured value.

The queue order is Slurm's ``sort_job_queue2``: expediting jobs first, then partition
``PriorityTier`` (higher first), priority (higher first), submit time, and the job SLUID. The
factors are computed with numpy over the whole queue.
"""

from __future__ import annotations

import numpy as np

from scheduler.jobs.partition_list import best_of
from scheduler.scheduling.fair_tree import fair_tree
from scheduler.shard.model import Job
from scheduler.shard.state import ShardState

__all__ = ["FACTORS", "PRIORITY_MAX", "first_come_order", "ones", "ordered_queue", "priorities",
           "weighted_factors"]

PRIORITY_MAX = 2**32 - 1


def _any_weight(state: ShardState) -> bool:
    w = state.config.priority
    return any(
        (w.weight_age, w.weight_fairshare, w.weight_job_size, w.weight_partition, w.weight_qos)
    )


def priorities(state: ShardState, jobs: list[Job], now_ms: int) -> np.ndarray:
    """Each job's multifactor priority at ``now_ms`` (int64)."""
    if not jobs:
        return np.zeros(0, dtype=np.int64)
    if not _any_weight(state):  # only nice and holds matter: stay in Python for small queues
        top = PRIORITY_MAX
        plain = [0 if j.hold else j.admin_priority or max(1, min(top, -j.spec.nice))
                 for j in jobs]
        return np.array(plain, dtype=np.int64)
    nice = np.fromiter((j.spec.nice for j in jobs), dtype=np.float64, count=len(jobs))
    score = -nice
    if _any_weight(state):
        score = score + _weighted_factors(state, jobs, now_ms)
    values = np.clip(np.floor(score), 1, PRIORITY_MAX).astype(np.int64)
    if _any_set(state):  # an operator's priority (scontrol update Priority=) wins
        for i, job in enumerate(jobs):
            if job.admin_priority:
                values[i] = job.admin_priority
    held = np.fromiter((bool(j.hold) for j in jobs), dtype=np.bool_, count=len(jobs))
    values[held] = 0
    return values


def _any_set(state: ShardState) -> bool:
    """Whether a pending job has an operator's priority (filed as out of order: few jobs)."""
    jobs = state.jobs
    return any(jobs[s].admin_priority for s in state.out_of_order if s in jobs)


def _weighted_factors(state: ShardState, jobs: list[Job], now_ms: int) -> np.ndarray:
    total = np.zeros(len(jobs), dtype=np.float64)
    for part in weighted_factors(state, jobs, now_ms).values():
        total += part  # in FACTORS order: the sum the formula always made
    return total


FACTORS = ("age", "fairshare", "jobsize", "partition", "qos")
"""The multifactor factors, in the order the priority adds them (sprio's columns)."""


def weighted_factors(state: ShardState, jobs: list[Job], now_ms: int) -> dict[str, np.ndarray]:
    """Each factor times its weight, per job (float64), for the factors whose weight is set,
    in :data:`FACTORS` order: what the priority is the sum of (less nice), and what sprio
    shows."""
    config = state.config
    w = config.priority
    n = len(jobs)
    parts: dict[str, np.ndarray] = {}
    if w.weight_age:
        eligible = np.fromiter(
            (max(j.submit_ms, j.spec.begin_time_ms) for j in jobs), dtype=np.float64, count=n
        )
        max_age_ms = max(w.max_age_s, 1) * 1000.0
        parts["age"] = w.weight_age * np.clip((now_ms - eligible) / max_age_ms, 0.0, 1.0)
    if w.weight_fairshare:
        factors = fair_tree(state, [(j.account, j.spec.user) for j in jobs])
        parts["fairshare"] = w.weight_fairshare * np.fromiter(
            (factors[(j.account, j.spec.user)] for j in jobs), dtype=np.float64, count=n
        )
    if w.weight_job_size:
        parts["jobsize"] = w.weight_job_size * _job_size(state, jobs)
    if w.weight_partition:
        tops = max((p.priority_job_factor for p in config.partitions), default=0) or 1
        factor = {p.name: p.priority_job_factor / tops for p in config.partitions}
        parts["partition"] = w.weight_partition * np.fromiter(
            (best_of(factor, j.partition, 0.0) for j in jobs), dtype=np.float64, count=n
        )
    if w.weight_qos:
        top = max((q.priority for q in config.qos), default=0) or 1
        qos_factor = {q.name: q.priority / top for q in config.qos}
        parts["qos"] = w.weight_qos * np.fromiter(
            (qos_factor.get(j.qos, 0.0) for j in jobs), dtype=np.float64, count=n
        )
    return parts


def _job_size(state: ShardState, jobs: list[Job]) -> np.ndarray:
    index = state.index
    node_total = max(len(index), 1)
    cpu_total = max(int(index.cap_cpus.sum()), 1)
    n = len(jobs)
    nodes = np.fromiter((j.demand.nodes_min for j in jobs), dtype=np.float64, count=n)
    cpus = np.fromiter(
        (j.demand.nodes_min * j.demand.cpus for j in jobs), dtype=np.float64, count=n
    )
    nodes, cpus = np.minimum(nodes, node_total), np.minimum(cpus, cpu_total)
    if state.config.priority.favor_small:
        return ((node_total - nodes) / node_total + (cpu_total - cpus) / cpu_total) / 2
    return (nodes / node_total + cpus / cpu_total) / 2


def first_come_order(state: ShardState) -> bool:
    """True when the queue is first come, first served with every priority 1: one partition
    ``PriorityTier``, no priority weight, no held, niced or expediting job."""
    if state.out_of_order:
        return False
    config = state.config
    cached, answer = _FIRST_COME[0]
    if cached is not config:  # a configuration is immutable: its identity is its value
        tiers = {p.priority_tier for p in config.partitions}
        answer = not _any_weight(state) and len(tiers) <= 1
        _FIRST_COME[0] = (config, answer)
    return answer


_FIRST_COME: list[tuple[object, bool]] = [(None, False)]
"""The configuration's part of :func:`first_come_order` for the last configuration asked
(a pass asks up to three times)."""


_ONES: list[np.ndarray] = [np.ones(0, dtype=np.int64)]


def ones(n: int) -> np.ndarray:
    """``n`` priorities of 1, read-only: a view of one array kept for every pass (a pass of a
    first-come queue asks for them every time; ``np.ones`` is a Python function)."""
    kept = _ONES[0]
    if len(kept) < n:
        kept = np.ones(max(n, 2 * len(kept)), dtype=np.int64)
        kept.flags.writeable = False
        _ONES[0] = kept
    return kept[:n]


def ordered_queue(state: ShardState, now_ms: int) -> tuple[list[Job], np.ndarray]:
    """The pending jobs in queue order, with their priorities (a parallel int64 array).

    The first-come order is the state's (kept sorted as jobs come and go); priorities are
    numpy arrays, and only a queue whose priorities differ is re-sorted (one lexsort).
    """
    by_id = state.jobs
    jobs = [by_id[s] for _, _, s in state.fifo()]
    if first_come_order(state):  # every priority is 1: first come, first served
        return jobs, ones(len(jobs))
    tiers = {p.name: p.priority_tier for p in state.config.partitions}
    one_tier = len(set(tiers.values())) <= 1
    prios = priorities(state, jobs, now_ms)
    if not jobs or (
        one_tier and prios.min() == prios.max() and not any(j.expediting for j in jobs)
    ):
        return jobs, prios
    tier = np.fromiter((best_of(tiers, j.partition, 0) for j in jobs), dtype=np.int64,
                       count=len(jobs))
    expediting = np.fromiter((j.expediting for j in jobs), dtype=np.bool_, count=len(jobs))
    order = np.lexsort((np.arange(len(jobs)), -prios, -tier, ~expediting))
    return [jobs[i] for i in order.tolist()], prios[order]
