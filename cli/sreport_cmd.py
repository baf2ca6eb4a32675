"""``sluice sreport`` (sreport): usage reports from the jobs' recorded runs and the nodes' states.

``sreport [-n] [-p|-P] [-t FORMAT] [-T cpu] TYPE REPORT [CONDITION...]`` with Slurm's reports:
``cluster Utilization``, ``cluster AccountUtilizationByUser``, ``cluster
UserUtilizationByAccount``, ``user TopUsage``, ``job SizesByAccount`` (names in any case,
abbreviated as sreport allows). Conditions as sreport's (keys in any case, abbreviated):
``Start=``, ``End=`` (default: yesterday 00:00 to today 00:00, each rounded to the nearest hour,
the end no later than now, at least an hour), ``Format=`` (fields, ``Name%WIDTH``), ``Users=``,
``Accounts=``, ``Tree``, ``TopCount=``, ``Group``, ``Grouping=``, ``PrintJobCount``,
``FlatView``, ``Partitions=``, ``Jobs=``; ``Clusters=`` and ``All_Clusters`` are accepted (one
cluster). The numbers come from ``GET /v1/usage`` (``projections.usage``), computed by
``cli.sreport_usage`` and laid out by ``cli.sreport_reports`` and ``cli.sreport_print``.
Everyone sees every user's usage, as Slurm's default ``PrivateData`` (docs/slurm-compat.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from cli.client import ApiError, Client
from cli.formats import slurm_time
from cli.slurm_program import SLURM_VERSION
from cli.slurm_units import parse_begin
from cli.sreport_layout import Request, UsageError, report_lines
from cli.sreport_print import MINUTES, TimeFormat, time_format
from streams.settings import Settings

__all__ = ["UsageError", "run", "window"]

USAGE = """Usage: sreport [OPTIONS] TYPE REPORT [CONDITIONS]
  TYPE REPORT: cluster Utilization | cluster AccountUtilizationByUser |
               cluster UserUtilizationByAccount | user TopUsage | job SizesByAccount
  OPTIONS: -n (no header)  -p/-P (parsable)  -t FORMAT (Seconds, Minutes, Hours, Percent,
           SecPer, MinPer, HourPer)
  CONDITIONS: Start= End= Format= Users= Accounts= Tree TopCount= Group Grouping=
              PrintJobCount FlatView Partitions= Jobs="""

_LONG = {"--noheader": "n", "--parsable": "p", "--parsable2": "P", "--help": "h",
         "--usage": "h", "--quiet": "Q", "--verbose": "v", "--version": "V",
         "--all_clusters": "a", "--local": "", "--federation": ""}


def run(argv: Sequence[str], settings: Settings | None = None) -> int:
    """``sluice sreport ARGS`` (``argv`` with the command's name first)."""
    try:
        flags, form, words = _options(list(argv[1:]))
        if "V" in flags:
            print(f"slurm {SLURM_VERSION}")
            return 0
        if "h" in flags or not words:  # no interactive mode: the usage
            print(USAGE)
            return 0 if "h" in flags else 1
        if len(words) < 2:
            raise UsageError(f"'{words[0]}' needs a report: see 'sreport --help'")
        request = Request(words[0], words[1], words[2:], form)
        now = datetime.now().astimezone()
        start, end = window(request.start_text, request.end_text, now)
        client = Client(settings or Settings.from_env())
        data = client.get(f"/v1/usage?start={start}&end={end}")
        text = ""
        if request.needs_tree:
            config = client.get("/v1/config")["config"]
            text = str(config.get("cluster", {}).get("text", ""))
    except UsageError as exc:
        print(f"sreport: error: {exc}", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(f"sreport: error: the views did not answer: {exc}", file=sys.stderr)
        return 1
    cluster = (settings or Settings.from_env()).cluster
    lines = report_lines(request, data, _tree_text(text), cluster=cluster, start=start,
                         end=end, now=int(now.timestamp() * 1000), header="n" not in flags,
                         delimiter="|" if flags & {"p", "P"} else None,
                         trailing="p" in flags and "P" not in flags, stamp=_stamp)
    print("\n".join(lines))
    return 0


def _stamp(ms: int) -> str:
    return slurm_time(ms)


def _tree_text(text: str) -> Callable[[], object]:
    def read() -> object:
        from scheduler.config.cluster import DEFAULT_CONFIG, ConfigError, parse_config

        if not text:
            return DEFAULT_CONFIG
        try:
            return parse_config(text)
        except ConfigError as exc:
            raise UsageError(f"the configuration in force does not read: {exc}") from exc
    return read


def _options(argv: list[str]) -> tuple[set[str], TimeFormat, list[str]]:
    flags: set[str] = set()
    form = MINUTES
    words: list[str] = []
    items = iter(argv)
    for arg in items:
        if arg in _LONG:
            flags.add(_LONG[arg])
        elif arg.startswith(("--time-format=", "--tres=", "--cluster=")):
            if arg.startswith("--time-format="):
                form = _format(arg.partition("=")[2])
            elif arg.startswith("--tres="):
                _tres(arg.partition("=")[2])
        elif arg.startswith("-") and len(arg) > 1 and not arg.startswith("--"):
            letters = arg[1:]
            while letters:
                letter, letters = letters[0], letters[1:]
                if letter in "tTM":
                    value = letters or next(items, "")
                    letters = ""
                    if letter == "t":
                        form = _format(value)
                    elif letter == "T":
                        _tres(value)
                elif letter in "npPhQvVa":
                    flags.add(letter)
                else:
                    raise UsageError(f"invalid option -- '{letter}'")
        elif arg.startswith("--"):
            raise UsageError(f"unrecognized option '{arg}'")
        else:
            words.append(arg)
    return flags, form, words


def _format(text: str) -> TimeFormat:
    try:
        return time_format(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _tres(text: str) -> None:
    if any(t.strip().lower() not in ("cpu", "") for t in text.split(",")):
        raise UsageError(f"TRES '{text}': Sluice's reports count CPUs only (-T cpu)")


def window(start_text: str, end_text: str, now: datetime) -> tuple[int, int]:
    """The report's window in Unix ms, as sreport sets it: Start= and End= (Slurm's times,
    local), by default yesterday 00:00 and today 00:00; the end no later than ``now``; each
    rounded to the nearest hour; at least an hour long."""
    try:
        end_ms = parse_begin(end_text, now, past=True) if end_text else 0
        start_ms = parse_begin(start_text, now, past=True) if start_text else 0
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if end_ms:
        end = _hour(datetime.fromtimestamp(min(end_ms, now.timestamp() * 1000) / 1000,
                                           now.tzinfo))
    else:
        end = midnight
    start = (_hour(datetime.fromtimestamp(start_ms / 1000, now.tzinfo)) if start_ms
             else (midnight - timedelta(days=1)).replace(hour=0))
    start_s, end_s = int(start.timestamp()), int(end.timestamp())
    end_s = max(end_s, start_s + 3600)
    return start_s * 1000, end_s * 1000


def _hour(moment: datetime) -> datetime:
    """``moment`` rounded to the nearest hour as sreport rounds (seconds ≥ 30 add a minute,
    then minutes ≥ 30 add an hour)."""
    minute = moment.minute + (1 if moment.second >= 30 else 0)
    base = moment.replace(minute=0, second=0, microsecond=0)
    return base + timedelta(hours=1) if minute >= 30 else base
