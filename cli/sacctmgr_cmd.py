"""``sluice sacctmgr`` (sacctmgr): the associations, accounts, users and QOS in force, read only.

Sluice keeps accounts, their users and limits, and QOS in the cluster configuration
(docs/configuration.md), not in a database: ``show`` (``list``) prints what the configuration in
force says, in sacctmgr's words, read from the views (``GET /v1/config``):

- ``show assoc[iations]``: root, then each account and its users in tree order (users first,
  then sub-accounts, by name); ``Share`` is an account's ``Fairshare`` (a user 1), the ``Grp``
  limits an account's own, the ``Max`` limits as they apply (an account's, else inherited from
  its parent, as a user's association gets them), ``QOS`` the account's QOS list (inherited)
  or, without one, every QOS defined, ``Def QOS`` ``normal`` when defined; ``tree`` indents
  accounts by depth;
- ``show account[s]``: ``Account Descr Org`` (no description or organization here: the name,
  as sacctmgr's defaults);
- ``show user[s]``: ``User Def Acct Admin`` (the first account listing the user; ``Operator``,
  ``Administrator`` from the configuration's lists, root an administrator);
- ``show qos``: each QOS's priority, limits and usage factor.

Filters as sacctmgr's (``where`` optional, keys in any case, values comma lists): ``user=``,
``account=``, ``name=`` (or names after the entity), ``parent=``; ``format=`` picks fields
(sacctmgr's names, any unique prefix, ``Name%WIDTH``); ``-n`` drops the header, ``-P``/``-p``
print ``|``-separated values. ``add``, ``modify``, ``delete`` and every other verb are refused
with what to do instead: edit the configuration and ``sluice config apply FILE``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cli.client import ApiError, Client
from cli.formats import Column, elapsed, render
from streams.settings import Settings

if TYPE_CHECKING:
    from scheduler.config.model import AccountConfig, ClusterConfig, QosConfig, TresLimits

__all__ = ["run", "sacctmgr_lines"]

Row = dict[str, str]
_ENTITIES = {"association": "assoc", "associations": "assoc", "assoc": "assoc",
             "account": "account", "accounts": "account", "user": "user", "users": "user",
             "qos": "qos"}
_FIELDS: dict[str, tuple[tuple[str, int], ...]] = {
    "assoc": (("Cluster", 10), ("Account", 10), ("User", 10), ("Partition", 10), ("Share", 9),
              ("Priority", 10), ("GrpJobs", 7), ("GrpTRES", 13), ("GrpSubmit", 9),
              ("GrpWall", 11), ("GrpTRESMins", 13), ("MaxJobs", 7), ("MaxTRES", 13),
              ("MaxTRESPerNode", 14), ("MaxSubmit", 9), ("MaxWall", 11), ("MaxTRESMins", 13),
              ("QOS", 20), ("Def QOS", 9), ("GrpTRESRunMins", 13), ("ParentName", 10)),
    "account": (("Account", 10), ("Descr", 20), ("Org", 20)),
    "user": (("User", 10), ("Def Acct", 10), ("Admin", 9)),
    "qos": (("Name", 10), ("Priority", 10), ("GraceTime", 10), ("Preempt", 10),
            ("PreemptMode", 11), ("Flags", 10), ("UsageThres", 10), ("UsageFactor", 11),
            ("GrpTRES", 13), ("GrpJobs", 7), ("GrpSubmit", 9), ("GrpWall", 11),
            ("MaxTRES", 13), ("MaxWall", 11), ("MaxJobsPU", 9), ("MaxSubmitPU", 11)),
}
"""Each entity's fields (header, width), the default format first (``ParentName`` is not
in assoc's default)."""
_DEFAULT_COUNT = {"assoc": 20}
_ALIASES = {"defaultqos": "Def QOS", "defqos": "Def QOS", "defaultaccount": "Def Acct",
            "defacct": "Def Acct", "fairshare": "Share", "adminlevel": "Admin",
            "parent": "ParentName", "description": "Descr", "organization": "Org"}
_REFUSED = ("Sluice keeps accounts, users and QOS in the cluster configuration: edit it "
            "(docs/configuration.md, 'Accounts', 'QOS') and run 'sluice config apply FILE'")


class UsageError(ValueError):
    """A call sacctmgr would refuse: its message."""


def run(argv: Sequence[str], settings: Settings | None = None) -> int:
    """``sluice sacctmgr ARGS`` (``argv`` with the command's name first: the CLI's
    passthrough entry)."""
    try:
        options, verb, entity, filters, fields = _parse(list(argv[1:]))
        if verb is None:
            print("sacctmgr: show|list ENTITY [where KEY=VALUE...] [format=FIELD,...] "
                  "(associations, accounts, users, qos)")
            return 0
        columns = _columns(entity, fields)
        try:
            client = Client(settings or Settings.from_env())
            text = str(client.get("/v1/config")["config"].get("cluster", {}).get("text", ""))
        except ApiError as exc:
            print(f"sacctmgr: error: the views did not answer: {exc}", file=sys.stderr)
            return 1
        rows = entity_rows(entity, _config(text), filters)
    except UsageError as exc:
        print(f"sacctmgr: error: {exc}", file=sys.stderr)
        return 1
    lines = sacctmgr_lines(rows, columns, header="n" not in options,
                           delimiter="|" if options & {"P", "p"} else None,
                           trailing="p" in options)
    if lines:
        print("\n".join(lines))
    return 0


def _parse(argv: list[str]) -> tuple[set[str], str | None, str, dict[str, list[str]],
                                     list[str]]:
    options: set[str] = set()
    words = []
    for arg in argv:
        long = {"--noheader": "n", "--parsable2": "P", "--parsable": "p", "--immediate": "i",
                "--quiet": "Q", "--associations": "s", "--readonly": "r"}
        if arg in long:
            options.add(long[arg])
        elif arg.startswith("-") and len(arg) > 1 and not arg.startswith("--"):
            options.update(arg[1:])
        elif arg.startswith("--"):
            raise UsageError(f"unrecognized option '{arg}'")
        else:
            words.append(arg)
    if not words:
        return options, None, "", {}, []
    verb = words[0].lower()
    if verb not in ("show", "list"):
        raise UsageError(f"'{words[0]}' is not done by sacctmgr here: {_REFUSED}")
    if len(words) < 2 or words[1].lower() not in _ENTITIES:
        raise UsageError(f"show what? One of: associations, accounts, users, qos (got "
                         f"{words[1] if len(words) > 1 else 'nothing'!r})")
    entity = _ENTITIES[words[1].lower()]
    filters: dict[str, list[str]] = {}
    fields: list[str] = []
    for word in words[2:]:
        key, eq, value = word.partition("=")
        key = key.lower().rstrip("s") if eq else key.lower()
        if not eq:
            if key in ("where", "withassoc", "withcoord", "withdeleted", "tree", "set"):
                filters.setdefault(key, [])
            else:
                filters.setdefault("name", []).extend(filter(None, word.split(",")))
        elif key == "format":
            fields += [f for f in value.split(",") if f]
        else:
            filters.setdefault(key, []).extend(v for v in value.split(",") if v)
    return options, verb, entity, filters, fields


def _columns(entity: str, fields: list[str]) -> list[Column]:
    known = _FIELDS[entity]
    if not fields:
        return [Column(h, h, w, True) for h, w in known[:_DEFAULT_COUNT.get(entity, len(known))]]
    columns = []
    for item in fields:
        name, _, size = item.partition("%")
        wanted = _ALIASES.get(name.lower().replace(" ", ""), name).lower().replace(" ", "")
        found = [(h, w) for h, w in known if h.lower().replace(" ", "") == wanted] or [
            (h, w) for h, w in known if h.lower().replace(" ", "").startswith(wanted)]
        if len(found) != 1 or not wanted:
            raise UsageError(f"Unknown field '{name}'")
        header, width = found[0]
        if size:
            if not size.lstrip("-").isdigit():
                raise UsageError(f"Bad field width in '{item}'")
            width = abs(int(size))
        columns.append(Column(header, header, width, not size.startswith("-")))
    return columns


def _config(text: str) -> ClusterConfig:
    from scheduler.config.cluster import DEFAULT_CONFIG, ConfigError, parse_config

    if not text:
        return DEFAULT_CONFIG
    try:
        return parse_config(text)
    except ConfigError as exc:  # the views hold what a shard applied: not expected
        raise UsageError(f"the configuration in force does not read: {exc}") from exc


def entity_rows(entity: str, config: ClusterConfig, filters: dict[str, list[str]]) -> list[Row]:
    """The rows of ``show ENTITY`` for ``config`` (the module docstring), filtered."""
    makers: dict[str, Callable[[ClusterConfig, dict[str, list[str]]], list[Row]]] = {
        "assoc": _associations, "account": _accounts, "user": _users, "qos": _qos}
    return makers[entity](config, filters)


def _wanted(filters: dict[str, list[str]], key: str, value: str) -> bool:
    return key not in filters or not filters[key] or value in filters[key]


def _tres(limits: TresLimits) -> str:
    parts = [("cpu", limits.cpu, ""), ("mem", limits.mem_mb, "M"), ("node", limits.node, ""),
             ("gres/gpu", limits.gpu, "")]
    return ",".join(f"{name}={value}{unit}" for name, value, unit in parts if value >= 0)


def _wall(seconds: int) -> str:
    return elapsed(seconds) if seconds > 0 else ""


def _count(value: int) -> str:
    return "" if value < 0 else str(value)


def _associations(config: ClusterConfig, filters: dict[str, list[str]]) -> list[Row]:
    from scheduler.config.accounts import account_qos

    accounts = {a.name: a for a in config.accounts}
    parent_of = _parents(accounts)
    defined = {q.name for q in config.qos}
    default_qos = "normal" if "normal" in defined else ""
    tree = "tree" in filters

    def inherited(name: str, attr: str, unset: Any) -> Any:
        seen: set[str] = set()
        while name in accounts and name not in seen:
            seen.add(name)
            value = getattr(accounts[name], attr)
            if value != unset:
                return value
            name = parent_of.get(name, "")
        return unset

    def row(account: str, user: str, depth: int, parent: str) -> Row:
        conf: AccountConfig | None = accounts.get(account)
        own = conf is not None and not user
        max_tres = _merged_tres(account, accounts, parent_of)
        return {
            "Cluster": config.cluster_name,
            "Account": (" " * depth if tree else "") + account, "User": user, "Partition": "",
            "Share": str(conf.shares if conf and not user else 1), "Priority": "",
            "GrpJobs": _count(conf.grp_jobs) if own and conf else "",
            "GrpTRES": _tres(conf.grp_tres) if own and conf else "",
            "GrpSubmit": _count(conf.grp_submit_jobs) if own and conf else "",
            "GrpWall": "", "GrpTRESMins": "",
            "MaxJobs": _count(inherited(account, "max_jobs", -1)),
            "MaxTRES": max_tres, "MaxTRESPerNode": "",
            "MaxSubmit": _count(inherited(account, "max_submit_jobs", -1)),
            "MaxWall": _wall(inherited(account, "max_wall_s", 0)),
            "MaxTRESMins": "", "QOS": ",".join(sorted(q for q in account_qos(
                config.accounts, account) if q in defined)),
            "Def QOS": default_qos, "GrpTRESRunMins": "",
            "ParentName": parent if not user else "",
        }

    rows: list[Row] = []
    users_of: dict[str, list[str]] = {}
    for conf in config.accounts:
        users_of.setdefault(conf.name, []).extend(conf.users)
    children: dict[str, list[str]] = {}
    for name in sorted(parent_of):
        children.setdefault(parent_of[name], []).append(name)

    def walk(account: str, depth: int, parent: str) -> None:
        if _wanted(filters, "account", account) and "user" not in filters:
            rows.append(row(account, "", depth, parent))
        for user in sorted(set(users_of.get(account, []))):
            if _wanted(filters, "account", account) and _wanted(filters, "user", user):
                rows.append(row(account, user, depth + 1, parent))
        for sub in children.get(account, []):
            walk(sub, depth + 1, account)

    walk("root", 0, "")
    return [r for r in rows if _wanted(filters, "parent", r["ParentName"]) or r["User"]]


def _parents(accounts: dict[str, AccountConfig]) -> dict[str, str]:
    """Each account's parent (root when none is named or the one named is not defined)."""
    return {name: a.parent if a.parent in accounts else "root"
            for name, a in accounts.items() if name != "root"}


def _merged_tres(account: str, accounts: dict[str, AccountConfig],
                 parent_of: dict[str, str]) -> str:
    """MaxTRESPerJob as it applies: each resource from the nearest account that sets it."""
    found: dict[str, int] = {}
    seen: set[str] = set()
    name = account
    while name in accounts and name not in seen:
        seen.add(name)
        limits = accounts[name].max_tres_per_job
        for key in ("cpu", "mem_mb", "node", "gpu"):
            if key not in found and getattr(limits, key) >= 0:
                found[key] = getattr(limits, key)
        name = parent_of.get(name, "")
    from scheduler.config.model import TresLimits

    return _tres(TresLimits(**found))


def _accounts(config: ClusterConfig, filters: dict[str, list[str]]) -> list[Row]:
    names = sorted({"root", *(a.name for a in config.accounts)})
    return [{"Account": n, "Descr": n, "Org": n} for n in names
            if _wanted(filters, "name", n) and _wanted(filters, "account", n)]


def _users(config: ClusterConfig, filters: dict[str, list[str]]) -> list[Row]:
    default: dict[str, str] = {}
    for conf in config.accounts:
        for user in conf.users:
            default.setdefault(user, conf.name)
    admins = {"root", *config.auth.administrators}
    operators = set(config.scheduler.operators)
    default.setdefault("root", "root")
    return [{"User": u, "Def Acct": default[u],
             "Admin": "Administrator" if u in admins else "Operator" if u in operators
             else "None"}
            for u in sorted(default)
            if _wanted(filters, "name", u) and _wanted(filters, "user", u)
            and _wanted(filters, "defaultaccount", default[u])]


def _qos(config: ClusterConfig, filters: dict[str, list[str]]) -> list[Row]:
    def row(q: QosConfig) -> Row:
        from scheduler.config.model import TresLimits

        grp = TresLimits(cpu=q.grp_cpus or -1, mem_mb=q.grp_mem_mb or -1,
                         node=q.grp_nodes or -1, gpu=q.grp_gpus or -1)
        return {"Name": q.name, "Priority": str(q.priority), "GraceTime": "00:00:00",
                "Preempt": "", "PreemptMode": "cluster", "Flags": "", "UsageThres": "",
                "UsageFactor": f"{q.usage_factor:f}", "GrpTRES": _tres(grp), "GrpJobs": "",
                "GrpSubmit": "", "GrpWall": "", "MaxTRES": "",
                "MaxWall": _wall(q.max_wall_s),
                "MaxJobsPU": str(q.max_jobs_per_user or ""),
                "MaxSubmitPU": str(q.max_submit_jobs_per_user or "")}

    return [row(q) for q in sorted(config.qos, key=lambda q: q.name)
            if _wanted(filters, "name", q.name)]


def sacctmgr_lines(rows: list[Row], columns: list[Column], *, header: bool = True,
                   delimiter: str | None = None, trailing: bool = False) -> list[str]:
    """sacctmgr's table: right-aligned fields a space apart, a line of dashes."""
    layout: list[Any] = []
    for column in columns:
        layout += [" ", column] if layout else [column]
    return render(rows, layout, header=header, delimiter=delimiter, trailing=trailing,
                  cut_mark="+", dashes=True, end=" ")
