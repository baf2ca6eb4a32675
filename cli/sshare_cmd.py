"""``sluice sshare`` (sshare): the fair-share tree, its shares, usage and standing, per shard.

Asks every shard once (``Client.plan_shares``: a ``PlanShares``, each shard answering with a
``SharesComputed`` computed by its own fair-share code at the decision time, reused for 10 s)
and prints Slurm's Fair Tree columns: ``Account User RawShares NormShares RawUsage
EffectvUsage FairShare``; ``-l`` adds ``NormUsage`` and ``LevelFS``. Accounts are indented by
their depth, a user row under its account; an account's FairShare is blank (Fair Tree ranks
users), root's RawShares blank, an association that used nothing has LevelFS ``inf``.

Whose rows: every account, and the caller's own user rows; ``-a`` every user's, ``-u`` those
users', ``-A`` only those accounts (and their users), ``-U`` user rows alone. ``-o`` picks
fields (Slurm's names, any unambiguous prefix, ``Name%WIDTH``), ``-p``/``-P`` print ``|``
separated values, ``-n`` drops the header.

Where Sluice differs: each shard keeps its own usage, so with several shards each prints its
own table under ``Shard NAME``; usage is CPU-seconds (Slurm's billable TRES), and with
``PriorityWeightFairshare`` 0 a run is charged at its end, not while it runs
(docs/scheduling.md); the GrpTRESMins, GrpTRESRaw, TRESRunMins, Partition and ID fields do
not exist here.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cli.client import ApiError, Client
from cli.formats import Column, parse_field_list, render
from cli.submit import real_user
from streams.settings import Settings

__all__ = ["add_parsers", "sshare_lines"]

WAIT_S = 10.0
"""How long sshare waits for every shard's answer."""

_FIELDS: dict[str, tuple[str, str, int, bool]] = {
    "account": ("account", "Account", 20, False),
    "effectvusage": ("effective_usage", "EffectvUsage", 13, True),
    "fairshare": ("fairshare", "FairShare", 10, True),
    "levelfs": ("level_fs", "LevelFS", 10, True),
    "normshares": ("norm_shares", "NormShares", 11, True),
    "normusage": ("norm_usage", "NormUsage", 11, True),
    "rawshares": ("raw_shares", "RawShares", 10, True),
    "rawusage": ("raw_usage", "RawUsage", 11, True),
    "user": ("user", "User", 10, True),
}
"""sshare's fields (lower-case name → key, header, width, right-justified), in Slurm's order
for prefix matching (``A`` is Account, ``Eff`` EffectvUsage)."""
_DEFAULT = "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare"
_LONG = "Account,User,RawShares,NormShares,RawUsage,NormUsage,EffectvUsage,FairShare,LevelFS"


def add_parsers(sub: Any) -> None:
    """Register sshare."""
    p = sub.add_parser("sshare", help="fair-share shares and usage (like sshare)",
                       add_help=False)
    p.add_argument("--help", action="help", help="show this help and exit")
    p.add_argument("-a", "--all", action="store_true", help="every user's associations")
    p.add_argument("-A", "--accounts", default="", help="these accounts (comma separated)")
    p.add_argument("-u", "--users", default="", help="these users (comma separated)")
    p.add_argument("-U", "--Users", dest="users_only", action="store_true",
                   help="user rows only, without their accounts")
    p.add_argument("-l", "--long", action="store_true", help="also NormUsage and LevelFS")
    p.add_argument("-o", "--format", default="", help="fields, e.g. Account,User,FairShare%%12")
    p.add_argument("--helpformat", action="store_true", help="list the fields -o takes")
    p.add_argument("-n", "--noheader", action="store_true", help="no header lines")
    p.add_argument("-p", "--parsable", action="store_true", help="'|' after every field")
    p.add_argument("-P", "--parsable2", action="store_true", help="'|' between fields")
    p.set_defaults(run=_sshare)


def field_list(text: str) -> list[Column]:
    """``-o``'s fields: each name (or unambiguous prefix, any case) with an optional
    ``%WIDTH``; ValueError names what is not a field."""
    names = []
    for item in filter(None, (i.strip() for i in text.split(","))):
        name, sep, size = item.partition("%")
        found = [f for f in _FIELDS if f.startswith(name.lower())] if name else []
        if len(found) != 1 and name.lower() not in _FIELDS:
            raise ValueError(f"Invalid field requested: \"{name}\"")
        names.append((name.lower() if name.lower() in _FIELDS else found[0]) + sep + size)
    return parse_field_list(",".join(names), _FIELDS, "--format", "%")


def _number(value: Any, *, blank_below: float | None = None, whole: bool = False) -> str:
    if value is None:
        return "inf"
    if blank_below is not None and float(value) < blank_below:
        return ""
    return str(int(value)) if whole else f"{float(value):f}"


def _cells(row: dict[str, Any]) -> dict[str, str]:
    depth = int(row.get("depth", 0))
    account = " " * depth + str(row.get("account", ""))
    return {
        "account": account, "user": str(row.get("user", "")),
        "raw_shares": _number(row.get("raw_shares", 0), blank_below=0, whole=True),
        "norm_shares": _number(row.get("norm_shares", 0.0)),
        "raw_usage": _number(row.get("raw_usage", 0.0), whole=True),
        "norm_usage": _number(row.get("norm_usage", 0.0)),
        "effective_usage": _number(row.get("effective_usage", 0.0)),
        "fairshare": _number(row.get("fairshare", 0.0), blank_below=0),
        "level_fs": "" if depth == 0 else _number(row.get("level_fs")),
    }


def selected(rows: list[dict[str, Any]], *, me: str, all_users: bool = False,
             users: str = "", accounts: str = "", users_only: bool = False
             ) -> list[dict[str, Any]]:
    """The rows sshare prints of a shard's tree (see the module docstring)."""
    wanted_users = set(filter(None, users.split(","))) or (set() if all_users else {me})
    wanted_accounts = set(filter(None, accounts.split(",")))
    shown = []
    for row in rows:
        user, account = str(row.get("user", "")), str(row.get("account", ""))
        if wanted_accounts and account not in wanted_accounts:
            continue
        if user:
            if wanted_users and user not in wanted_users:
                continue
        elif users_only:
            continue
        shown.append(row)
    return shown


def sshare_lines(rows: list[dict[str, Any]], columns: list[Column], *, header: bool = True,
                 delimiter: str | None = None, trailing: bool = False) -> list[str]:
    """sshare's table of ``rows`` (answer rows) in ``columns``."""
    layout: list[Any] = []
    for column in columns:  # one space between fields and after the last, as Slurm's
        layout += [" ", column] if layout else [column]
    return render([_cells(r) for r in rows], layout, header=header, delimiter=delimiter,
                  trailing=trailing, cut_mark="+", dashes=True, end=" ")


def _sshare(args: argparse.Namespace, settings: Settings) -> int:
    if args.helpformat:
        print(" ".join(h for _, h, _, _ in _FIELDS.values()))
        return 0
    try:
        columns = field_list(args.format or (_LONG if args.long else _DEFAULT))
    except ValueError as exc:
        print(f"sshare: error: {exc}", file=sys.stderr)
        return 1
    client = Client(settings)
    try:
        answer = client.plan_shares(WAIT_S)
    except (ApiError, ValueError) as exc:
        print(f"sshare: error: Couldn't get shares from controller: {exc}", file=sys.stderr)
        return 1
    if answer is None or "denial" in answer:
        why = (f"{answer['denial'].get('reason', '')}: {answer['denial'].get('detail', '')}"
               if answer else f"no shard answered within {WAIT_S:g} s")
        print(f"sshare: error: Couldn't get shares from controller: {why}", file=sys.stderr)
        return 1
    found = answer.get("shares") or {}
    if not found.get("complete", False):
        print(f"sshare: not every shard answered within {WAIT_S:g} s (answered: "
              f"{', '.join(sorted(found.get('shards') or {})) or 'none'})", file=sys.stderr)
    shards = sorted((found.get("shards") or {}).items())
    delimiter = "|" if args.parsable or args.parsable2 else None
    for shard, part in shards:
        if part.get("missing"):
            print(f"sshare: the views no longer hold the answer shard {shard} reused; try "
                  "again in 10 s", file=sys.stderr)
        rows = selected([dict(r) for r in part.get("associations", [])], me=real_user(),
                        all_users=args.all, users=args.users, accounts=args.accounts,
                        users_only=args.users_only)
        if len(shards) > 1:
            print(f"Shard {shard}")
        print("\n".join(sshare_lines(rows, columns, header=not args.noheader,
                                     delimiter=delimiter, trailing=args.parsable)))
    return 0
