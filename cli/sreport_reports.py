"""sreport's five reports as tables: fields, rows and banner, from ``/v1/usage`` and the
account tree of the configuration in force (``cli.sreport_cmd`` parses and prints).

Amounts are whole seconds of CPU time (``cli.sreport_usage`` computes them in CPU-ms):

- ``cluster Utilization``: one row, the cluster's allocated, down, planned-down, idle, planned
  and reported time (percentages of the reported time; Reported's of CPUs times the window);
- ``cluster AccountUtilizationByUser``: ``root`` (everything), then each account (its
  subtree's total) followed by its users' associations and its sub-accounts, by name; only
  associations that used time in the window, as sreport lists those with usage records
  (``Tree`` indents accounts by depth);
- ``cluster UserUtilizationByAccount``: each user and account that used the cluster, most
  used first;
- ``user TopUsage``: the ``TopCount`` (10) users who used most, one line per account, or per
  user with ``Group`` (its accounts joined by ``, ``);
- ``job SizesByAccount``: per top account (the accounts under ``root``, or under ``Accounts=``;
  every account with ``FlatView``), the time (``PrintJobCount``: the jobs) in each CPU-count
  group and its share of the cluster's.

A job's account "" (no account configured) shows as ``root``.
"""

from __future__ import annotations

import pwd
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cli.sreport_usage import association_usage, cluster_utilization, size_usage

__all__ = ["Query", "Tree", "account_rows", "proper_name", "size_rows", "top_rows",
           "user_rows", "utilization_values"]


@dataclass(frozen=True, slots=True)
class Tree:
    """The association tree: each account's parent ("" under root) and configured users."""

    parent: Mapping[str, str] = field(default_factory=dict)
    users: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def children(self, account: str) -> list[str]:
        """The accounts right under ``account`` ("root": the top ones), by name."""
        under = "" if account == "root" else account
        return sorted(a for a, p in self.parent.items() if p == under and a != "root")

    def top_of(self, account: str, roots: Sequence[str]) -> str:
        """The account right under one of ``roots`` ("root" for the top) that ``account``
        belongs to (``account`` itself when it is one of them or under none)."""
        chain = [account]
        while chain[-1] and len(chain) < 64:
            parent = self.parent.get(chain[-1], "") if chain[-1] != "root" else ""
            if parent in chain:
                break
            chain.append(parent)  # "" is root
        for index, name in enumerate(chain[1:], start=1):
            if (name or "root") in roots:
                return chain[index - 1]
        return account


@dataclass(frozen=True, slots=True)
class Query:
    """What the report covers: the window, the clock, and the conditions that filter."""

    start: int
    end: int
    now: int
    users: frozenset[str] = frozenset()
    accounts: tuple[str, ...] = ()
    partitions: frozenset[str] = frozenset()
    jobs: frozenset[int] = frozenset()

    def keeps(self, run: Mapping[str, Any]) -> bool:
        """The run is of the users, partitions and jobs asked for (all when none)."""
        if not (self.users or self.partitions or self.jobs):
            return True
        return ((not self.users or str(run.get("user", "")) in self.users)
                and (not self.partitions or str(run.get("partition", "")) in self.partitions)
                and (not self.jobs or int(run.get("job_id") or 0) in self.jobs
                     or int(run.get("array_job_id") or 0) in self.jobs))


def _account(run: Mapping[str, Any]) -> str:
    return str(run.get("account") or "root")


def _named(runs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [run if run.get("account") else {**run, "account": "root"} for run in runs]


def utilization_values(runs: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
                       query: Query) -> dict[str, int]:
    """``cluster Utilization``'s amounts in CPU-seconds, and ``count`` (average CPUs)."""
    use = cluster_utilization(runs, nodes, query.start, query.end, query.now)
    parts = {"allocated": use.allocated // 1000, "down": use.down // 1000,
             "planned_down": use.planned_down // 1000, "planned": use.planned // 1000}
    reported = use.reported // 1000
    idle = reported - sum(parts.values())  # whole seconds that add up, as Slurm's Reported
    return {**parts, "idle": max(0, idle), "overcommitted": max(0, -idle),
            "reported": reported, "count": use.cpu_count}


def account_rows(runs: Sequence[Mapping[str, Any]], tree: Tree, query: Query, *,
                 indent: bool) -> list[dict[str, Any]]:
    """``AccountUtilizationByUser``'s rows: ``account``, ``user`` ("" for an account row),
    ``used`` (CPU-seconds), in tree order from root or from the ``Accounts=`` given."""
    kept = [run for run in _named(runs) if query.keeps(run)]
    used = association_usage(kept, query.start, query.end, query.now)
    parent = {**{a: p for a, p in tree.parent.items() if a != "root"},
              **{a: "" for a, _u in used if a not in tree.parent and a != "root"}}
    users: dict[str, set[str]] = {a: set(u) for a, u in tree.users.items()}
    for account, user in used:
        users.setdefault(account, set()).add(user)
    full = Tree(parent, {a: sorted(u) for a, u in users.items()})
    rows: list[dict[str, Any]] = []

    def total(account: str) -> int:
        own = sum(v for (a, _u), v in used.items() if a == account)
        return own + sum(total(child) for child in full.children(account))

    def walk(account: str, depth: int) -> None:
        subtotal = total(account)
        if not subtotal:  # sreport lists the associations that have usage records
            return
        rows.append({"account": " " * depth * indent + account, "user": "",
                     "used": subtotal // 1000})
        for user in full.users.get(account, ()):
            if used.get((account, user)) and (not query.users or user in query.users):
                rows.append({"account": " " * (depth + 1) * indent + account, "user": user,
                             "used": used[account, user] // 1000})
        for child in full.children(account):
            walk(child, depth + 1)

    for account in query.accounts or ("root",):
        walk(account, 0)
    return rows


def user_rows(runs: Sequence[Mapping[str, Any]], query: Query) -> list[dict[str, Any]]:
    """``UserUtilizationByAccount``'s rows: each (user, account) that used time, most first."""
    kept = [run for run in _named(runs) if query.keeps(run)
            and (not query.accounts or _account(run) in query.accounts)]
    used = association_usage(kept, query.start, query.end, query.now)
    rows = [{"account": a, "user": u, "used": v // 1000} for (a, u), v in used.items()]
    return sorted(rows, key=lambda r: (-r["used"], r["user"], r["account"]))


def top_rows(runs: Sequence[Mapping[str, Any]], query: Query, *, group: bool,
             count: int) -> list[dict[str, Any]]:
    """``user TopUsage``'s rows: the ``count`` users who used most (per account, or grouped)."""
    rows = user_rows(runs, query)
    if group:
        merged: dict[str, dict[str, Any]] = {}
        for row in rows:
            mine = merged.setdefault(row["user"], {"user": row["user"], "accounts": [],
                                                   "used": 0})
            mine["accounts"].append(row["account"])
            mine["used"] += row["used"]
        rows = [{"user": r["user"], "account": ", ".join(sorted(r["accounts"])),
                 "used": r["used"]} for r in merged.values()]
        rows.sort(key=lambda r: (-r["used"], r["user"]))
    return rows[:count]


def size_rows(runs: Sequence[Mapping[str, Any]], tree: Tree, query: Query, *,
              bounds: Sequence[int], flat: bool) -> list[tuple[str, list[int], list[int]]]:
    """``job SizesByAccount``'s rows: (account, seconds per group, jobs per group)."""
    kept = [run for run in _named(runs) if query.keeps(run)]
    roots = list(query.accounts or ("root",))
    shown = sorted({a for a in tree.parent if a != "root"} | {_account(r) for r in kept}) \
        if flat else sorted({c for root in roots for c in tree.children(root)})
    top_of = {} if flat else {a: tree.top_of(a, roots) for a in {_account(r) for r in kept}}
    if not flat and query.accounts:
        kept = [r for r in kept if _within(tree, _account(r), roots)]
    sizes = size_usage(kept, query.start, query.end, query.now, bounds, top_of)
    names = sorted(set(shown) | set(sizes))
    empty = [0] * (len(bounds) + 1)
    return [(name, [t // 1000 for t in sizes.get(name, (empty, empty))[0]],
             list(sizes.get(name, (empty, empty))[1])) for name in names]


def _within(tree: Tree, account: str, roots: Sequence[str]) -> bool:
    current, seen = account, set()
    while current and current not in seen:
        if current in roots:
            return True
        seen.add(current)
        current = tree.parent.get(current, "")
    return "root" in roots


def proper_name(user: str) -> str:
    """The user's full name (the GECOS field up to its first comma), "" when unknown."""
    try:
        gecos = pwd.getpwnam(user).pw_gecos
    except (KeyError, TypeError):
        return ""
    return gecos.split(",")[0]
