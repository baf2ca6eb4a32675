"""The fair-share tree as ``sshare`` shows it: every association, its shares, usage and standing.

Built from the pass's own Fair Tree (:mod:`scheduler.scheduling.fair_tree`): the accounts of
the configuration (``Parent``, ``Fairshare``), their users (an account's ``Users``, and every
``(account, user)`` the shard has charged usage to or holds a pending or running job of), and
the decayed usage the shard keeps per account and user. For each association, Slurm's Fair Tree
quantities (``fair_tree.c``):

- ``norm_shares`` S: its shares over the sum of its siblings' (a user has 1 share);
- ``raw_usage``: its decayed usage at ``now_ms``, CPU-seconds times the QOS ``UsageFactor``;
- ``effective_usage`` U: its usage over its parent's; ``norm_usage``: over root's;
- ``level_fs`` = S / U (infinite when it used nothing, 0 without shares);
- ``fairshare`` of a user: its Fair Tree rank among every user association of the tree
  (:func:`~scheduler.scheduling.fair_tree.rank_users`), the factor the scheduling pass uses.

Rows are in tree order: root, then under each account its users by name, then its
sub-accounts by name (Slurm's hierarchical order); a user whose account the configuration no
longer has is listed under root with that account's name. At most :data:`SHARES_MAX` rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.scheduling.fair_tree import ROOT, association_tree, rank_users
from scheduler.scheduling.fairshare import decayed

if TYPE_CHECKING:
    from scheduler.shard.state import ShardState

__all__ = ["SHARES_MAX", "ShareRow", "share_rows"]

SHARES_MAX = 5_000
"""The most associations one answer lists (the fact stays well under a broker's message
limit: ~60 bytes an association)."""


@dataclass(frozen=True, slots=True)
class ShareRow:
    """One association of the tree (``user`` "" for an account)."""

    account: str
    user: str
    depth: int
    raw_shares: int
    norm_shares: float
    raw_usage: float
    norm_usage: float
    effective_usage: float
    level_fs: float
    fairshare: float


def share_rows(state: ShardState, now_ms: int) -> list[ShareRow]:
    """The shard's associations in tree order, as :mod:`this module <.shares>` describes."""
    tree = association_tree(state)
    factors = rank_users(tree)
    usage = _true_usage(state, now_ms)
    root_usage = usage.get(ROOT, 0.0)
    rows = [ShareRow("root", "", 0, -1, 1.0, root_usage, 1.0 if root_usage > 0 else 0.0,
                     1.0 if root_usage > 0 else 0.0, math.inf, -1.0)]

    def walk(parent: str, depth: int) -> None:
        for kid in tree.children.get(parent, []):
            if len(rows) > SHARES_MAX:
                return
            used = usage.get(kid, 0.0)
            pair = tree.pairs.get(kid)
            account, user = (pair[0] or "root", pair[1]) if pair else (kid[8:], "")
            rows.append(ShareRow(
                account, user, depth, tree.shares[kid], tree.norm_shares[kid], used,
                used / root_usage if root_usage > 0 else 0.0, tree.effective_usage[kid],
                tree.level_fs[kid], factors.get(kid, 0.0) if pair else -1.0))
            if not pair:
                walk(kid, depth + 1)

    walk(ROOT, 1)
    return rows[:SHARES_MAX]


def _true_usage(state: ShardState, now_ms: int) -> dict[str, float]:
    """The stored usage as it weighs at ``now_ms`` (stored values share one decay scale)."""
    meta = state.meta
    half_life_s = state.config.priority.decay_half_life_s
    return {key: decayed(value, now_ms - meta.usage_ms, half_life_s)
            for key, value in meta.usage.items()}
