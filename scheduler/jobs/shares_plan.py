"""``PlanShares`` → ``SharesComputed``: Slurm's ``sshare``, decided by each shard.

A shard answers with its fair-share tree (:func:`scheduler.scheduling.shares.share_rows`: each
account and user association, its shares, decayed usage and Fair Tree standing at the request's
recorded time). Requests are coalesced as ``sprio``'s (:mod:`scheduler.jobs.priorities_plan`):
one decided less than :data:`SHARES_REUSE_MS` after the shard's last answer (record time) is
answered with that answer (``reuses`` = its event SLUID), so however many ``sshare`` run, the
ledger gets at most one full answer per shard per 10 s. The fact changes no job or node: the
fold records the time and SLUID of the shard's last answer, which makes the reuse deterministic.
"""

from __future__ import annotations

from scheduler.records import Fact, PlanShares, SharesComputed
from scheduler.scheduling.shares import share_rows
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["SHARES_REUSE_MS", "decide_plan_shares", "shares_computed"]

SHARES_REUSE_MS = 10_000
"""An answer younger than this (record time) answers the next ``PlanShares`` too."""


def decide_plan_shares(state: ShardState, req: PlanShares, st: Stamper) -> list[Fact]:
    """This shard's fair-share tree, or the reuse of its answer of less than 10 s ago."""
    meta = st.meta()
    now = meta["time_ms"]
    half_life_s = state.config.priority.decay_half_life_s
    last = state.meta
    if last.shares_sluid and now - last.shares_ms < SHARES_REUSE_MS:
        return [SharesComputed(**meta, request_sluid=req.request_sluid, nonce=req.nonce,
                               user=req.user, half_life_s=half_life_s,
                               reuses=last.shares_sluid)]
    rows = share_rows(state, now)
    return [SharesComputed(
        **meta, request_sluid=req.request_sluid, nonce=req.nonce, user=req.user,
        half_life_s=half_life_s,
        accounts=tuple(r.account for r in rows), users=tuple(r.user for r in rows),
        depths=tuple(r.depth for r in rows), raw_shares=tuple(r.raw_shares for r in rows),
        norm_shares=tuple(r.norm_shares for r in rows),
        raw_usage=tuple(r.raw_usage for r in rows),
        norm_usage=tuple(r.norm_usage for r in rows),
        effective_usage=tuple(r.effective_usage for r in rows),
        level_fs=tuple(r.level_fs for r in rows), fairshare=tuple(r.fairshare for r in rows),
    )]


def shares_computed(state: ShardState, fact: SharesComputed) -> None:
    """The fold (evolve's): a new answer (not a reuse) is the one the next 10 s reuse."""
    if not fact.reuses:
        state.meta.shares_ms, state.meta.shares_sluid = fact.time_ms, fact.event_sluid
