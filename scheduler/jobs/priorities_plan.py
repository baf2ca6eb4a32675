"""``PlanPriorities`` → ``PrioritiesComputed``: Slurm's ``sprio``, decided by each shard.

A shard answers with its pending jobs in queue order that sprio lists (eligible: begin time
reached; not held: priority 0), at most :data:`PRIORITIES_MAX`, each with its priority and the
weighted factors that priority is the sum of, computed by the scheduling pass's own code
(:func:`scheduler.scheduling.priority.ordered_queue` and
:func:`~scheduler.scheduling.priority.weighted_factors`, over the whole queue as a pass does)
at the request's recorded time. A job whose priority an operator set shows that priority and
the factors the formula would give it.

Requests are coalesced as ``squeue --start``'s (:mod:`scheduler.jobs.starts`): one decided
less than :data:`PRIORITIES_REUSE_MS` after the shard's last answer (record time) is answered
with that answer (``reuses`` = its event SLUID), so however many ``sprio`` run, the ledger gets
at most one full answer per shard per 10 s. The fact changes no job or node: the fold records
the time and SLUID of the shard's last answer, which makes the reuse deterministic.
"""

from __future__ import annotations

import numpy as np

from scheduler.records import Fact, PlanPriorities, PrioritiesComputed
from scheduler.scheduling.priority import ordered_queue, weighted_factors
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["PRIORITIES_MAX", "PRIORITIES_REUSE_MS", "decide_plan_priorities",
           "priorities_computed"]

PRIORITIES_REUSE_MS = 10_000
"""An answer younger than this (record time) answers the next ``PlanPriorities`` too."""
PRIORITIES_MAX = 1_000
"""The most jobs one answer lists (the fact stays well under a broker's message limit)."""


def decide_plan_priorities(state: ShardState, req: PlanPriorities, st: Stamper) -> list[Fact]:
    """This shard's priority factors, or the reuse of its answer of less than 10 s ago."""
    meta = st.meta()
    now = meta["time_ms"]
    w = state.config.priority
    weights = {"age": w.weight_age, "fairshare": w.weight_fairshare,
               "jobsize": w.weight_job_size, "partition": w.weight_partition,
               "qos": w.weight_qos}
    last = state.meta
    if last.priorities_sluid and now - last.priorities_ms < PRIORITIES_REUSE_MS:
        return [PrioritiesComputed(**meta, request_sluid=req.request_sluid, nonce=req.nonce,
                                   user=req.user, weights=weights,
                                   reuses=last.priorities_sluid)]
    jobs, prios = ordered_queue(state, now)
    shown = [i for i, job in enumerate(jobs)
             if not job.hold and job.spec.begin_time_ms <= now][:PRIORITIES_MAX]
    parts = weighted_factors(state, jobs, now) if jobs else {}
    rows = np.array(shown, dtype=np.int64)

    def column(name: str) -> tuple[int, ...]:
        part = parts.get(name)
        if part is None:
            return (0,) * len(shown)
        return tuple(int(v) for v in np.rint(part[rows]).tolist())

    picked = [jobs[i] for i in shown]
    return [PrioritiesComputed(
        **meta, request_sluid=req.request_sluid, nonce=req.nonce, user=req.user,
        weights=weights,
        job_sluids=tuple(j.job_sluid for j in picked),
        job_ids=tuple(j.job_id for j in picked),
        priorities=tuple(int(prios[i]) for i in shown),
        age=column("age"), fairshare=column("fairshare"), jobsize=column("jobsize"),
        partition=column("partition"), qos=column("qos"),
        nice=tuple(j.spec.nice for j in picked),
        admin_priorities=tuple(j.admin_priority for j in picked),
    )]


def priorities_computed(state: ShardState, fact: PrioritiesComputed) -> None:
    """The fold (evolve's): a new answer (not a reuse) is the one the next 10 s reuse."""
    if not fact.reuses:
        state.meta.priorities_ms, state.meta.priorities_sluid = fact.time_ms, fact.event_sluid
