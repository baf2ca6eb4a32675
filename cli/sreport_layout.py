"""sreport's reports, conditions and fields (names as Slurm's ``src/sreport`` matches them)
and the lines each report prints: its banner, header and rows (``cli.sreport_cmd`` runs it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cli.sreport_print import Field, TimeFormat, amount, table, usage_width
from cli.sreport_reports import (
    Query,
    Tree,
    account_rows,
    proper_name,
    size_rows,
    top_rows,
    user_rows,
    utilization_values,
)

__all__ = ["Request", "UsageError", "report_lines"]

RULE = "-" * 80


class UsageError(ValueError):
    """A call sreport would refuse: its message."""


def _match(value: str, names: Sequence[tuple[str, int, str]]) -> str | None:
    """The key of the first ``(name, least letters, key)`` that ``value`` abbreviates."""
    low = value.lower()
    for name, least, key in names:
        if len(low) >= least and name.lower().startswith(low):
            return key
    return None


_REPORTS = {
    "cluster": (("AccountUtilizationByUser", 1, "account"), ("AccountUtilizationByQOS", 19, ""),
                ("UserUtilizationByAccount", 18, "user"), ("UserUtilizationByWckey", 18, ""),
                ("Utilization", 2, "utilization"), ("WCKeyUtilizationByUser", 1, "")),
    "job": (("SizesByAccount", 1, "sizes"), ("SizesByWcKey", 8, ""),
            ("SizesByAccountAndWckey", 15, "")),
    "user": (("TopUsage", 1, "top"),),
}
_TYPES = (("cluster", 1, "cluster"), ("job", 1, "job"), ("user", 1, "user"),
          ("reservation", 1, "reservation"))
_CONDITIONS = (
    ("All_Clusters", 1, "all"), ("Accounts", 2, "accounts"), ("Acct", 4, "accounts"),
    ("Clusters", 1, "clusters"), ("End", 1, "end"), ("Format", 1, "format"),
    ("FlatView", 2, "flat"), ("Group", 1, "group"), ("Grouping", 5, "grouping"),
    ("Jobs", 1, "jobs"), ("Partitions", 2, "partitions"), ("PrintJobCount", 2, "count"),
    ("Start", 1, "start"), ("TopCount", 1, "top"), ("Tree", 4, "tree"), ("Users", 1, "users"),
)
_FIELDS: dict[str, tuple[tuple[str, int, str], ...]] = {
    "cluster": (("Accounts", 2, "account"), ("allocated", 2, "allocated"),
                ("Cluster", 2, "cluster"), ("down", 1, "down"), ("Energy", 1, "energy"),
                ("idle", 1, "idle"), ("Login", 1, "login"), ("overcommitted", 1, "over"),
                ("planned", 2, "planned"), ("reserved", 3, "planned"),
                ("PlannedDown", 2, "planned_down"), ("PLNDDown", 2, "planned_down"),
                ("Proper", 2, "proper"), ("reported", 3, "reported"),
                ("TresCount", 5, "count"), ("cpucount", 2, "count"), ("count", 2, "count"),
                ("TresName", 5, "tres"), ("Used", 1, "used")),
    "user": (("Accounts", 1, "account"), ("Cluster", 1, "cluster"), ("Energy", 1, "energy"),
             ("Login", 1, "login"), ("Proper", 1, "proper"), ("TresName", 5, "tres"),
             ("Used", 1, "used")),
    "job": (("Account", 1, "account"), ("Acct", 4, "account"), ("Cluster", 2, "cluster")),
}
_HEADERS = {"account": ("Account", 15), "allocated": ("Allocated", 0), "cluster": ("Cluster", 9),
            "down": ("Down", 0), "energy": ("Energy", 0), "idle": ("Idle", 0),
            "login": ("Login", 9), "over": ("Over Comm", 0), "planned": ("Planned", 0),
            "planned_down": ("PLND Down", 0), "proper": ("Proper Name", 15),
            "reported": ("Reported", 0), "count": ("TRES Count", 10), "tres": ("TRES Name", 14),
            "used": ("Used", 0)}
"""Field key → header and width (0: a usage column, sized by its amounts)."""
_DEFAULTS = {
    "utilization": ["cluster", "allocated", "down", "planned_down", "idle", "planned",
                    "reported"],
    "account": ["cluster", "account", "login", "proper", "used", "energy"],
    "user": ["cluster", "login", "proper", "account", "used", "energy"],
    "top": ["cluster", "login", "proper", "account", "used", "energy"],
    "sizes": ["cluster", "account"],
}
_TITLES = {"account": "Cluster/Account/User Utilization", "user":
           "Cluster/User/Account Utilization", "utilization": "Cluster Utilization"}


class Request:
    """One report asked for: its kind, its conditions and its fields (UsageError when
    sreport would refuse them)."""

    def __init__(self, kind: str, report: str, conditions: Sequence[str],
                 form: TimeFormat) -> None:
        area = _match(kind, _TYPES)
        if area is None or area == "reservation":
            raise UsageError(f"Not valid report type {kind}: cluster, job or user")
        found = _match(report, _REPORTS[area])
        if not found:
            names = ", ".join(n for n, _l, k in _REPORTS[area] if k)
            raise UsageError(f"Not valid report {report}: Sluice has the {area} reports "
                             f"{names} (no WCKeys or QOS usage are recorded)")
        self.area, self.report, self.form = area, found, form
        self.values: dict[str, list[str]] = {}
        self.flags: set[str] = set()
        for word in conditions:
            key, eq, value = word.partition("=")
            name = _match(key, _CONDITIONS)
            if name is None:
                raise UsageError(f"Unknown condition: {word}")
            if eq:
                self.values.setdefault(name, []).extend(v for v in value.split(",") if v)
            else:
                self.flags.add(name)
        self.fields = self._fields()

    @property
    def start_text(self) -> str:
        """``Start=``'s text ("" when not given)."""
        return ",".join(self.values.get("start", []))

    @property
    def end_text(self) -> str:
        """``End=``'s text ("" when not given)."""
        return ",".join(self.values.get("end", []))

    @property
    def needs_tree(self) -> bool:
        """The report shows accounts by the configuration's tree."""
        return self.report in ("account", "sizes")

    def _fields(self) -> list[tuple[str, int | None]]:
        wanted = self.values.get("format")
        if not wanted:
            return [(key, None) for key in _DEFAULTS[self.report]]
        fields = []
        for item in wanted:
            name, _pct, size = item.partition("%")
            key = _match(name, _FIELDS[self.area])
            if key is None:
                raise UsageError(f"Unknown field '{name}'")
            if size and not size.lstrip("-").isdigit():
                raise UsageError(f"Bad field width in '{item}'")
            fields.append((key, int(size) if size else None))
        return fields

    def query(self, start: int, end: int, now: int) -> Query:
        """The window and filters of this report."""
        try:
            jobs = frozenset(int(j.split(".")[0]) for j in self.values.get("jobs", []))
        except ValueError as exc:
            raise UsageError(f"Jobs= takes job ids: {exc}") from exc
        return Query(start, end, now, frozenset(self.values.get("users", [])),
                     tuple(self.values.get("accounts", [])),
                     frozenset(self.values.get("partitions", [])), jobs)


def report_lines(request: Request, data: Mapping[str, Any], read_config: Callable[[], Any], *,
                 cluster: str, start: int, end: int, now: int, header: bool,
                 delimiter: str | None, trailing: bool, stamp: Callable[[int], str]
                 ) -> list[str]:
    """The lines ``request`` prints for ``data`` (``/v1/usage``'s answer)."""
    runs, nodes = list(data.get("runs", [])), list(data.get("nodes", []))
    query = request.query(start, end, now)
    form, secs = request.form, (end - start) // 1000
    span = f"{stamp(start)} - {stamp(end - 1000)}"
    use = "Usage reported in " + (form.words if form.unit == 0 else f"CPU {form.words}")
    banner: list[str]
    if request.report == "utilization":
        banner = [RULE, f"Cluster Utilization {span}", use, RULE]
        fields, rows = _utilization(request, runs, nodes, query, cluster)
    elif request.report == "sizes":
        unit = ("Units are in number of jobs ran" if "count" in request.flags
                else f"Time reported in {form.words}")
        banner = [RULE, f"Job Sizes {span} ({secs} secs)", unit, RULE]
        fields, rows = _sizes(request, runs, _tree(read_config()), query, cluster)
    else:
        count = int((request.values.get("top") or ["10"])[0]) \
            if (request.values.get("top") or ["10"])[0].isdigit() else 10
        title = _TITLES.get(request.report, f"Top {count} Users")
        banner = [RULE, f"{title} {span} ({secs} secs)", use, RULE]
        total = utilization_values(runs, nodes, query)["reported"]
        if request.report == "account":
            found = account_rows(runs, _tree(read_config()), query, indent="tree" in request.flags)
        elif request.report == "user":
            found = user_rows(runs, query)
        else:
            found = top_rows(runs, query, group="group" in request.flags, count=count)
        fields, rows = _associations(request, found, total, cluster)
    lines = banner if header else []
    return lines + table(fields, rows, header=header, delimiter=delimiter, trailing=trailing)


def _tree(config: Any) -> Tree:
    accounts = list(getattr(config, "accounts", ()))
    return Tree({a.name: a.parent for a in accounts}, {a.name: list(a.users) for a in accounts})


def _field(key: str, size: int | None, largest: int, form: TimeFormat,
           tree: bool = False) -> Field:
    header, width = _HEADERS[key]
    if width == 0:
        width = usage_width(largest, form)
    if key == "account" and tree:
        width = -20
    return Field(header, width if size is None else size)


def _utilization(request: Request, runs: list[Any], nodes: list[Any], query: Query,
                 cluster: str) -> tuple[list[Field], list[list[str]]]:
    values = utilization_values(runs, nodes, query)
    reported, secs = values["reported"], (query.end - query.start) // 1000
    cells = {"cluster": cluster, "count": str(values["count"]), "tres": "cpu", "energy": "0",
             "reported": amount(reported, secs * values["count"], request.form)}
    for key in ("allocated", "down", "planned_down", "idle", "planned", "over"):
        cells[key] = amount(values["overcommitted" if key == "over" else key], reported,
                            request.form)
    keys = {"over": "overcommitted"}
    fields = [_field(k, s, values.get(keys.get(k, k), 0) if _HEADERS[k][1] == 0 else 0,
                     request.form) for k, s in request.fields]
    return fields, [[cells.get(k, "") for k, _s in request.fields]]


def _associations(request: Request, found: list[dict[str, Any]], total: int,
                  cluster: str) -> tuple[list[Field], list[list[str]]]:
    largest = max((row["used"] for row in found), default=0)
    fields = [_field(k, s, largest if k == "used" else 0, request.form, "tree" in request.flags)
              for k, s in request.fields]
    rows = []
    for row in found:
        cells = {"cluster": cluster, "account": row["account"], "login": row["user"],
                 "proper": proper_name(row["user"]) if row["user"] else "", "tres": "cpu",
                 "used": amount(row["used"], total, request.form),
                 "energy": amount(0, total, request.form)}
        rows.append([cells.get(k, "") for k, _s in request.fields])
    return fields, rows


def _sizes(request: Request, runs: list[Any], tree: Tree, query: Query,
           cluster: str) -> tuple[list[Field], list[list[str]]]:
    try:
        bounds = sorted({int(g) for g in request.values.get("grouping", [])}) or [50, 250, 500,
                                                                                  1000]
    except ValueError as exc:
        raise UsageError(f"Grouping= takes CPU counts: {exc}") from exc
    found = size_rows(runs, tree, query, bounds=bounds, flat="flat" in request.flags)
    by_count = "count" in request.flags
    per = request.form.percent and request.form.unit != 0
    fields = [Field({"cluster": "Cluster", "account": "Account"}[k], s or 9)
              for k, s in request.fields]
    lows = [0, *bounds]
    fields += [Field(f"{low}-{high - 1} CPUs", 20 if per else 13)
               for low, high in zip(lows, bounds, strict=False)]
    fields += [Field(f">= {bounds[-1]} CPUs", 20 if per else 13), Field("% of cluster", 12)]
    cluster_total = sum(sum(counts if by_count else times) for _a, times, counts in found)
    rows = []
    for account, times, counts in found:
        mine = sum(counts if by_count else times)
        cells = [{"cluster": cluster, "account": account}[k] for k, _s in request.fields]
        cells += [str(c) for c in counts] if by_count else [
            amount(t, mine, request.form) for t in times]
        cells.append(f"{100.0 * mine / (cluster_total or 1):.2f}%")
        rows.append(cells)
    return fields, rows
