"""Reading the ``Accounts`` entries of a cluster file: the account tree and its limits.

Slurm's association keys (``sacctmgr``), on an account:

- ``GrpTRES`` (``cpu=``, ``mem=``, ``node=``, ``gres/gpu=``), ``GrpJobs``, ``GrpSubmitJobs`` — caps
  on everything the account's subtree runs (or has pending and running, for ``GrpSubmitJobs``);
- ``MaxJobs``, ``MaxSubmitJobs`` — per user of the account; ``MaxWall``, ``MaxTRESPerJob`` — per
  job. An account that leaves a ``Max`` key unset inherits its parent's (Slurm's association
  inheritance);
- ``QOS`` — the QOS its jobs may name (Slurm's association QOS list): an account without one
  has its parent's, and where no account of the path has one, ``normal`` alone (Slurm's
  default association list; :func:`account_qos`).

A count is a whole number ≥ 0 (0 is a limit: nothing may run or be submitted) or ``UNLIMITED``
/ ``INFINITE`` / ``-1`` (no limit of its own). Every error names the file and the line:
malformed values, an unknown ``Parent``, an account defined twice, a cycle of parents.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from scheduler.config.model import NO_TRES, AccountConfig, TresLimits
from scheduler.config.values import ConfigError, as_int, as_mem_mb, as_str, as_str_list, as_time_s

__all__ = ["DEFAULT_QOS_LIST", "account_qos", "build_accounts", "parse_limit", "parse_tres_limits"]

T = TypeVar("T")

ROOT = "root"
MAX_DEPTH = 256
"""The deepest an account may sit below ``root``: the Fair Tree's walks recurse once a level,
and a 1,200-deep chain (which the file took) made every ranking raise ``RecursionError``."""
DEFAULT_QOS_LIST = ("normal",)
"""The QOS list of an association whose path to root sets none: Slurm's default (a new
association gets the cluster's default QOS list, ``normal``). Every QOS open instead let any
user name an administrator's high-priority or ``UsageFactor=0`` QOS unless the file listed
QOS on every account."""
_UNLIMITED = {"UNLIMITED", "INFINITE", "-1"}
_TRES_NAMES = ("cpu", "mem", "node", "gres/gpu")


class _Entry(Protocol):
    source: str
    line: int
    items: dict[str, Any]

    def get(self, key: str, convert: Callable[[Any, str], T], default: T) -> T: ...

    def finish(self, what: str) -> None: ...


def parse_limit(value: Any, key: str) -> int:
    """A count limit: a whole number ≥ 0, or -1 for ``UNLIMITED``/``INFINITE``/``-1``."""
    text = as_str(value, key)
    if text.upper() in _UNLIMITED:
        return -1
    try:
        number = int(text)
    except ValueError:
        raise ValueError(f"{key} must be a whole number or UNLIMITED, not {text!r}") from None
    if number < 0:
        raise ValueError(f"{key} must not be negative (-1 or UNLIMITED for no limit), not {number}")
    return number


def parse_tres_limits(value: Any, key: str) -> TresLimits:
    """``cpu=64,mem=512G,node=4,gres/gpu=8`` → :class:`TresLimits` (memory in MB; -1 = none)."""
    found: dict[str, int] = {}
    for item in as_str_list(value, key):
        name, equals, amount = item.partition("=")
        name = name.strip().lower()
        if name not in _TRES_NAMES:
            known = ", ".join(_TRES_NAMES)
            raise ValueError(f"{key}: unknown TRES {name!r} in {item!r} (known: {known})")
        if not equals or not amount.strip():
            raise ValueError(f"{key}: {item!r} has no amount (e.g. {name}=4)")
        if name in found:
            raise ValueError(f"{key}: {name} is given twice")
        amount = amount.strip()
        if amount.upper() in _UNLIMITED:
            found[name] = -1
        elif name == "mem":
            if amount.startswith("-"):
                raise ValueError(f"{key}: mem must not be negative, not {amount!r}")
            found[name] = as_mem_mb(amount, f"{key} mem")
        else:
            found[name] = parse_limit(amount, f"{key} {name}")
    return TresLimits(
        cpu=found.get("cpu", -1),
        mem_mb=found.get("mem", -1),
        node=found.get("node", -1),
        gpu=found.get("gres/gpu", -1),
    )


def build_accounts(entries: Sequence[_Entry]) -> tuple[AccountConfig, ...]:
    """Every ``Accounts`` entry, checked as a tree (see the module docstring)."""
    accounts = tuple(_build_account(entry) for entry in entries)
    _check_tree(accounts, entries)
    return accounts


def _build_account(entry: _Entry) -> AccountConfig:
    name = entry.get("Name", as_str, "")
    if not name:
        raise ConfigError(entry.source, entry.line, "an account entry needs Name")
    account = AccountConfig(
        name=name,
        parent=entry.get("Parent", as_str, ""),
        shares=entry.get("Fairshare", as_int(0), 1),
        users=entry.get("Users", as_str_list, ()),
        grp_tres=entry.get("GrpTRES", parse_tres_limits, NO_TRES),
        grp_jobs=entry.get("GrpJobs", parse_limit, -1),
        grp_submit_jobs=entry.get("GrpSubmitJobs", parse_limit, -1),
        max_jobs=entry.get("MaxJobs", parse_limit, -1),
        max_submit_jobs=entry.get("MaxSubmitJobs", parse_limit, -1),
        max_wall_s=entry.get("MaxWall", as_time_s, 0),
        max_tres_per_job=entry.get("MaxTRESPerJob", parse_tres_limits, NO_TRES),
        qos=entry.get("QOS", as_str_list, ()),
    )
    entry.finish(f"account {name}")
    return account


def _line(entry: _Entry, key: str) -> int:
    node = entry.items.get(key)
    return node.start_mark.line + 1 if node is not None else entry.line


def _check_tree(accounts: tuple[AccountConfig, ...], entries: Sequence[_Entry]) -> None:
    """Names unique, parents known, ``root`` without a parent, no cycle of parents."""
    seen: dict[str, int] = {}
    for account, entry in zip(accounts, entries, strict=True):
        if account.name in seen:
            reason = f"account {account.name} is defined twice (first at line {seen[account.name]})"
            raise ConfigError(entry.source, entry.line, reason)
        seen[account.name] = entry.line
    for account, entry in zip(accounts, entries, strict=True):
        if account.name == ROOT and account.parent not in ("", ROOT):
            reason = "account root cannot have a parent"
            raise ConfigError(entry.source, _line(entry, "Parent"), reason)
        if account.parent and account.parent not in seen and account.parent != ROOT:
            reason = f"account {account.name} has unknown parent {account.parent}"
            raise ConfigError(entry.source, _line(entry, "Parent"), reason)
    parents = {a.name: a.parent or ROOT for a in accounts if a.name != ROOT}
    for account, entry in zip(accounts, entries, strict=True):
        path, name = [account.name], parents.get(account.name, ROOT)
        while name != ROOT:
            if name in path:
                cycle = " -> ".join([*path[path.index(name) :], name])
                reason = f"account {account.name}: its parents form a cycle ({cycle})"
                raise ConfigError(entry.source, _line(entry, "Parent"), reason)
            path.append(name)
            if len(path) > MAX_DEPTH:
                reason = f"account {account.name} is more than {MAX_DEPTH} levels below root"
                raise ConfigError(entry.source, _line(entry, "Parent"), reason)
            name = parents[name]


def account_qos(accounts: Sequence[AccountConfig], name: str) -> tuple[str, ...]:
    """The QOS a job under account ``name`` ("": root) may name: the first ``QOS`` list on the
    way from the account up to root; :data:`DEFAULT_QOS_LIST` when none has one (or the
    account is not configured)."""
    by_name = {a.name: a for a in accounts}
    name = name or ROOT  # a job of no account is root's
    seen: set[str] = set()
    while name in by_name and name not in seen:
        seen.add(name)
        if by_name[name].qos:
            return by_name[name].qos
        name = by_name[name].parent or ROOT
    return DEFAULT_QOS_LIST
