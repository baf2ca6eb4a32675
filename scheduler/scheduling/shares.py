"""The fair-share tree as ``sshare`` shows it: every association, its shares, usage and standing.

Built from what the pass's Fair Tree reads (:mod:`scheduler.scheduling.fairshare`): the accounts
of the configuration (``Parent``, ``Fairshare``), their users (an account's ``Users``, and every
``(account, user)`` the shard has charged usage to or holds a pending or running job of), and
the decayed usage the shard keeps per account and user. For each association, Slurm's Fair Tree
quantities (``fair_tree.c``):

- ``norm_shares`` S: its shares over the sum of its siblings' (a user has 1 share);
- ``raw_usage``: its decayed usage at ``now_ms``, CPU-seconds times the QOS ``UsageFactor``;
- ``effective_usage`` U: its usage over its parent's; ``norm_usage``: over root's;
- ``level_fs`` = S / U (infinite when it used nothing, 0 without shares);
- ``fairshare`` of a user: its rank among **every** user association of the tree by the
  depth-first walk of Fair Tree (:func:`~scheduler.scheduling.fairshare.fair_tree`), first
  ``n/n``. The scheduling pass ranks only the users of its pending jobs (their order is the
  same, the fractions differ), so sprio's fairshare column may read differently.

Rows are in tree order: root, then under each account its users by name, then its
sub-accounts by name (Slurm's hierarchical order); a user whose account the configuration no
longer has is listed under root with that account's name. At most :data:`SHARES_MAX` rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.scheduling.fairshare import decayed, fair_tree

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
    config = state.config
    parents = {a.name: a.parent or "root" for a in config.accounts if a.name != "root"}
    shares = {a.name: a.shares for a in config.accounts if a.name != "root"}
    sub_accounts: dict[str, list[str]] = {"root": []}
    for name in sorted(parents):
        parent = parents[name] if parents[name] in parents or parents[name] == "root" else "root"
        sub_accounts.setdefault(parent, []).append(name)
        sub_accounts.setdefault(name, [])
    pairs = _associations(state)
    users: dict[str, list[tuple[str, str]]] = {}  # owning account → (account, user) pairs
    for account, user in sorted(pairs):
        owner = account if account in sub_accounts else "root"
        users.setdefault(owner, []).append((account, user))
    usage = _true_usage(state, now_ms)
    factors = fair_tree(state, sorted(pairs))
    root_usage = usage.get("account:root", 0.0)
    rows = [ShareRow("root", "", 0, -1, 1.0, root_usage, 1.0 if root_usage > 0 else 0.0,
                     1.0 if root_usage > 0 else 0.0, math.inf, -1.0)]

    def walk(account: str, depth: int, account_usage: float) -> None:
        kids_users = users.get(account, [])
        kids_accounts = sub_accounts.get(account, [])
        total_shares = len(kids_users) + sum(shares[a] for a in kids_accounts)
        for acct, user in kids_users:
            used = usage.get(f"user:{acct}:{user}", 0.0)
            rows.append(_row(acct or "root", user, depth, 1, total_shares, used, account_usage,
                             root_usage, factors.get((acct, user), 0.0)))
        for name in kids_accounts:
            used = usage.get(f"account:{name}", 0.0)
            rows.append(_row(name, "", depth, shares[name], total_shares, used, account_usage,
                             root_usage, -1.0))
            walk(name, depth + 1, used)

    walk("root", 1, root_usage)
    return rows[:SHARES_MAX]


def _row(account: str, user: str, depth: int, raw_shares: int, total_shares: int,
         used: float, parent_used: float, root_used: float, fairshare: float) -> ShareRow:
    norm_shares = raw_shares / total_shares if total_shares > 0 else 0.0
    effective = used / parent_used if parent_used > 0 else 0.0
    if norm_shares <= 0:
        level = 0.0
    elif effective <= 0:
        level = math.inf
    else:
        level = norm_shares / effective
    return ShareRow(account, user, depth, raw_shares, norm_shares, used,
                    used / root_used if root_used > 0 else 0.0, effective, level, fairshare)


def _associations(state: ShardState) -> set[tuple[str, str]]:
    """Every (account, user) the tree lists: configured, charged, or with a job in the shard."""
    pairs = {(a.name, user) for a in state.config.accounts for user in a.users}
    for key in state.meta.usage:
        if key.startswith("user:"):
            account, _, user = key[5:].partition(":")
            pairs.add((account, user))
    pairs.update(key for key, count in state.active_by_account_user.items() if count > 0)
    return pairs


def _true_usage(state: ShardState, now_ms: int) -> dict[str, float]:
    """The stored usage as it weighs at ``now_ms`` (stored values share one decay scale)."""
    meta = state.meta
    half_life_s = state.config.priority.decay_half_life_s
    return {key: decayed(value, now_ms - meta.usage_ms, half_life_s)
            for key, value in meta.usage.items()}
