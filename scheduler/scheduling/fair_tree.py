"""Slurm's Fair Tree: the association tree, each association's Level Fairshare, users' ranks.

The tree (:func:`association_tree`) is root, the configured accounts under their ``Parent``
(root when none or unknown), and the user associations: every ``(account, user)`` an account's
``Users`` lists, the shard has charged usage to, or holds a pending or running job of (plus any
a caller names), under their account (root when the account is not configured: no account, or
one a later configuration removed). Without configured accounts a user is one association,
``("", user)``, whatever account its jobs name (:func:`association`). A user association has
one share; an account its ``Fairshare``.

Each association's **Level Fairshare** is ``LF = S / U`` (Slurm's ``_calc_assoc_fs``): ``S``
its shares over the sum of its siblings', ``U`` its usage over its parent's; infinite when it
used nothing (``U`` 0), 0 without shares. Usage is the shard's decayed usage
(:mod:`scheduler.scheduling.fairshare`), stored with one scale common to every entry, so the
ratios are exact.

The **ranks** (:func:`rank_users`, Slurm's ``_calc_tree_fs``): siblings are sorted by LF,
highest first, users before accounts on equal LF (then by name, where Slurm's ``qsort`` leaves
the order open); a depth-first walk in that order meets the users, and the ``k``-th met of
``n`` user associations in the whole tree gets ``(n - k + 1) / n`` (the first ``n/n = 1``),
with Slurm's ties: sibling users of equal LF share the rank of the first of them; sibling
accounts of equal LF have their children merged and sorted together; an account whose LF
equals the sibling met just before it starts tied, so its first user shares that rank.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.config.model import ClusterConfig
    from scheduler.shard.state import ShardState

__all__ = ["ROOT", "AssociationTree", "association", "association_tree", "fair_tree",
           "rank_users", "user_key"]

ROOT = "account:root"
"""The root account's key (usage is charged to it for every run)."""


def association(config: ClusterConfig, account: str, user: str) -> tuple[str, str]:
    """The association a job of ``user`` under ``account`` is charged and ranked as: the pair
    itself, or ``("", user)`` when the configuration has no accounts (then ``-A`` names
    nothing Sluice checks: a user who named a new account for each job would otherwise rank
    as an unused association every time and escape their usage)."""
    return (account, user) if config.accounts else ("", user)


def user_key(account: str, user: str) -> str:
    """A user association's key, as usage is charged to it (``user:ACCOUNT:USER``)."""
    return f"user:{account}:{user}"


@dataclass(slots=True)
class AssociationTree:
    """Children by parent key (sorted by name: users, then accounts), shares, usage, LF."""

    children: dict[str, list[str]] = field(default_factory=dict)
    shares: dict[str, int] = field(default_factory=dict)
    usage: dict[str, float] = field(default_factory=dict)
    level_fs: dict[str, float] = field(default_factory=dict)
    norm_shares: dict[str, float] = field(default_factory=dict)
    effective_usage: dict[str, float] = field(default_factory=dict)
    pairs: dict[str, tuple[str, str]] = field(default_factory=dict)  # user key → (account, user)


def association_tree(state: ShardState, named: Iterable[tuple[str, str]] = ()
                     ) -> AssociationTree:
    """The shard's tree with every association's LF (see the module docstring)."""
    config = state.config
    tree = AssociationTree(usage=state.meta.usage)
    accounts = {a.name: a for a in config.accounts if a.name != "root"}
    parent_of = {name: a.parent if a.parent in accounts else "root"
                 for name, a in accounts.items()}  # none named, or not defined: root
    tree.children[ROOT] = []
    for name in sorted(accounts):
        tree.children["account:" + name] = []
        tree.shares["account:" + name] = accounts[name].shares
    pairs = {(a.name, user) for a in config.accounts for user in a.users}
    pairs.update(named)
    for key in state.meta.usage:
        if key.startswith("user:"):
            account, _, user = key[5:].partition(":")
            pairs.add((account, user))
    pairs.update(association(config, *pair)
                 for pair, count in state.active_by_account_user.items() if count > 0)
    users: dict[str, list[str]] = {}
    for account, user in sorted(pairs):
        key = user_key(account, user)
        tree.pairs[key] = (account, user)
        tree.shares[key] = 1
        users.setdefault("account:" + (account if account in accounts else "root"), []).append(key)
    for name in sorted(accounts):  # each account's sub-accounts, by name
        tree.children["account:" + parent_of[name]].append("account:" + name)
    for parent, kids in tree.children.items():
        tree.children[parent] = users.get(parent, []) + kids
        _level_fs(tree, parent, tree.children[parent])
    return tree


def _level_fs(tree: AssociationTree, parent: str, kids: list[str]) -> None:
    total_shares = sum(tree.shares[k] for k in kids)
    parent_usage = tree.usage.get(parent, 0.0)
    for kid in kids:
        s = tree.shares[kid] / total_shares if total_shares > 0 else 0.0
        u = tree.usage.get(kid, 0.0) / parent_usage if parent_usage > 0 else 0.0
        tree.norm_shares[kid], tree.effective_usage[kid] = s, u
        tree.level_fs[kid] = 0.0 if s <= 0 else (math.inf if u <= 0 else s / u)


def rank_users(tree: AssociationTree) -> dict[str, float]:
    """Each user association's Fair Tree factor in [0, 1] (the module docstring)."""
    count = len(tree.pairs)
    factors: dict[str, float] = {}
    rank = rnt = count

    def walk(siblings: list[str], account_tied: bool) -> None:
        nonlocal rank, rnt
        ordered = sorted(siblings, key=lambda k: (-tree.level_fs[k], k.startswith("account:"), k))
        previous: float | None = None
        i = 0
        while i < len(ordered):
            kid = ordered[i]
            lf = tree.level_fs[kid]
            tied = account_tied if i == 0 and account_tied else previous == lf
            if kid in tree.pairs:
                if not tied:
                    rank = rnt
                factors[kid] = rank / count
                rnt -= 1
            else:
                last = i
                while (last + 1 < len(ordered) and ordered[last + 1] not in tree.pairs
                       and tree.level_fs[ordered[last + 1]] == lf):
                    last += 1
                merged = [c for k in ordered[i:last + 1] for c in tree.children.get(k, [])]
                walk(merged, tied)
                i = last
            previous = lf
            i += 1

    walk(tree.children.get(ROOT, []), False)
    return factors


def fair_tree(state: ShardState, associations: list[tuple[str, str]]
              ) -> dict[tuple[str, str], float]:
    """The Fair Tree factor of each ``(account, user)`` in ``associations``, in [0, 1], ranked
    among every user association of the shard's tree (Slurm's ``fs_factor``)."""
    config = state.config
    named = set(associations)  # a pass names each association once per pending job
    factors = rank_users(association_tree(state, {association(config, *p) for p in named}))
    return {(a, u): factors.get(user_key(*association(config, a, u)), 0.0) for a, u in named}
