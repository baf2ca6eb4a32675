"""``PlanStarts`` → ``StartsPlanned``: Slurm's ``squeue --start``, decided by each shard.

A shard answers with the planned starts of its first pending jobs
(:func:`scheduler.scheduling.planned_starts.planned_starts`: the scheduling pass, then a
conservative plan of the jobs it left waiting; at most ``bf_max_job_test`` and
:data:`STARTS_MAX` jobs), at the request's recorded time. Its cost is a scheduling pass, so
requests are **coalesced**: one decided less than :data:`STARTS_REUSE_MS` after the shard's
last plan (record time) is answered with that plan (``reuses`` = its event SLUID) instead of a
new pass, so however many ``squeue --start`` run, a shard plans at most once per 10 s of
record time. Slurm's ``squeue --start`` shows the estimates of the last backfill cycle (every
``bf_interval``, 30 s by default), older still.

The fact changes no job or node: the fold records the time and SLUID of the shard's last plan
(``ShardMeta.starts_ms``, ``starts_sluid``), which is what makes the reuse deterministic: a
replay of the ledger, or a re-decision of the same inputs, gives the same answers.
"""

from __future__ import annotations

from scheduler.records import Fact, PlanStarts, StartsPlanned
from scheduler.scheduling.planned_starts import planned_starts
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from scheduler.topology.hostlist import compress

__all__ = ["STARTS_MAX", "STARTS_REUSE_MS", "decide_plan_starts", "starts_planned"]

STARTS_REUSE_MS = 10_000
"""A plan younger than this (record time) answers the next ``PlanStarts`` too."""
STARTS_MAX = 1_000
"""The most jobs one plan lists (the fact stays well under a broker's message limit)."""


def decide_plan_starts(state: ShardState, req: PlanStarts, st: Stamper) -> list[Fact]:
    """This shard's planned starts, or the reuse of its plan of less than 10 s ago."""
    meta = st.meta()
    now = meta["time_ms"]
    last = state.meta
    if last.starts_sluid and now - last.starts_ms < STARTS_REUSE_MS:
        return [StartsPlanned(**meta, request_sluid=req.request_sluid, nonce=req.nonce,
                              user=req.user, pending=len(state.pending),
                              reuses=last.starts_sluid)]
    limit = min(state.config.scheduler.bf_max_job_test, STARTS_MAX)
    plans = planned_starts(state, now, limit)
    return [StartsPlanned(
        **meta, request_sluid=req.request_sluid, nonce=req.nonce, user=req.user,
        pending=len(state.pending),
        job_sluids=tuple(p.job_sluid for p in plans),
        job_ids=tuple(p.job_id for p in plans),
        starts_ms=tuple(p.start_ms for p in plans),
        nodes=tuple(compress(list(p.nodes)) for p in plans),
    )]


def starts_planned(state: ShardState, fact: StartsPlanned) -> None:
    """The fold (evolve's): a new plan (not a reuse) is the one the next 10 s of requests
    reuse."""
    if not fact.reuses:
        state.meta.starts_ms, state.meta.starts_sluid = fact.time_ms, fact.event_sluid
