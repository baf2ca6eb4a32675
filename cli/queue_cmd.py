"""``sluice queue`` as squeue prints it: ``-o`` (``%`` codes), ``-O`` (field names), ``-t``
(short or long state names), ``-u``/``--me``, ``-j``, ``-n``, ``-h``/``--noheader``.

The default layout is squeue's ``%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R``. Array tasks show
as ``BASE_TASK``; the tasks of an array still pending as submitted fold into one line
``BASE_[3-6%2]`` as squeue prints them (``cli.array_fold``), one line each with ``-r``. ``-j``
takes job ids, an array's id (all its tasks) and ``BASE_TASK``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any

from cli.array_fold import fold_pending_tasks
from cli.client import ApiError, ApiUnavailableError, Client
from cli.formats import parse_field_list, parse_percent, render
from cli.job_fields import (
    SQUEUE_CODES,
    SQUEUE_FIELDS,
    ended,
    job_names,
    job_values,
    state_filter,
)
from cli.queue_starts import planned_starts, with_plans, with_priorities
from cli.submit import real_user
from scheduler.topology.hostlist import expand
from streams.settings import Settings

__all__ = ["DEFAULT_FORMAT", "add_queue_parser", "array_bases", "matches_state"]

DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG_FORMAT = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
DEFAULT_SORT = "P,t,-p"
"""squeue's order without ``-S`` (``sort_job_list``): by partition, then state as printed
(``PD`` before ``R``: the pending jobs first), then priority, highest first; ties keep the
views' order (job id)."""
START_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
_SORT_NUMBERS = frozenset({"i", "A", "p", "Q", "D", "C", "c", "y"})
"""``-S`` keys sorted as numbers (the rest as text: times sort as written)."""
_ACTIVE = frozenset({"PENDING", "RUNNING", "COMPLETING", "SUSPENDED", "EXPEDITING",
                     "RESV_DEL_HOLD"})


def add_queue_parser(sub: Any) -> None:
    """Register ``queue`` (its ``-h`` is squeue's ``--noheader``; help is ``--help``)."""
    q = sub.add_parser("queue", help="pending and running jobs (like squeue)", add_help=False)
    q.add_argument("--help", action="help", help="show this help and exit")
    q.add_argument("-u", "--user", default="", help="comma list of users")
    q.add_argument("--me", action="store_true", help="only my jobs")
    q.add_argument("-A", "--account", default="")
    q.add_argument("-p", "--partition", default="")
    q.add_argument("-q", "--qos", default="")
    q.add_argument("-R", "--reservation", default="", help="only the jobs of this reservation")
    q.add_argument("-j", "--jobs", default="", help="comma list of job ids")
    q.add_argument("-n", "--name", default="", help="comma list of job names")
    q.add_argument("-w", "--nodelist", default="", help="jobs on these nodes (a host list)")
    q.add_argument("-a", "--all", action="store_true",
                   help="accepted: every partition is shown (Sluice hides none)")
    q.add_argument("-t", "--states", default="", help="e.g. PD,R or PENDING,RUNNING or all")
    q.add_argument("-o", "--format", default="", help="squeue %%-format, e.g. '%%i %%t %%R'")
    q.add_argument("-O", "--Format", dest="field_format", default="",
                   help="field list, e.g. JobID,State:10,ReasonList")
    q.add_argument("-h", "--noheader", action="store_true")
    q.add_argument("-l", "--long", action="store_true",
                   help="squeue's long format, after the time of day")
    q.add_argument("--start", action="store_true",
                   help="pending jobs with their expected start and nodes, planned by each "
                        "shard on request (N/A: not planned)")
    q.add_argument("-S", "--sort", default="",
                   help="sort keys: format letters, - for descending (e.g. -p,i)")
    q.add_argument("-r", "--array", action="store_true",
                   help="one line per array task (pending tasks are folded by default)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=run_queue)


def matches_state(row: Mapping[str, Any], wanted: frozenset[str] | None) -> bool:
    """Does the job's shown state, base state or a flag name one of ``wanted`` (None: all)."""
    if wanted is None:
        return True
    return bool({str(row["state"]), *row.get("flags", [])} & wanted)


def select_rows(jobs: list[dict[str, Any]], args: argparse.Namespace,
                wanted: frozenset[str] | None, include_ended: bool) -> list[dict[str, Any]]:
    """The jobs the filters keep (a refused submission is no job: it has no id); raises
    ValueError for a ``-w`` that is no host list."""
    ids = set(_job_refs(args.jobs))  # run_queue has refused a bad one
    names = {n for n in args.name.split(",") if n}
    qos = {q for q in args.qos.split(",") if q}
    where = frozenset(expand(args.nodelist)) if args.nodelist else frozenset()
    return [
        j for j in jobs
        if j.get("job_id") and (not args.start or j["state"] == "PENDING")
        and matches_state(j, wanted) and (not ids or bool(job_names(j, {}) & ids))
        and (not names or j.get("name") in names) and (not qos or j.get("qos") in qos)
        and (not args.reservation or j.get("reservation") == args.reservation)
        and (not where or not where.isdisjoint(j.get("nodes") or ()))
        and (include_ended or not ended(j))
    ]


def _sort_keys(text: str) -> list[tuple[str, bool]]:
    """``-S``'s keys: (format letter, descending); ValueError names an unknown one."""
    keys = []
    for item in filter(None, (i.strip() for i in text.split(","))):
        letter = item.lstrip("+-")
        if letter not in SQUEUE_CODES:
            raise ValueError(f"-S: unknown sort key {item!r} (format letters: "
                             f"{' '.join(sorted(SQUEUE_CODES))})")
        keys.append((letter, item.startswith("-")))
    return keys


def _sorted(rows: list[dict[str, Any]], values: list[dict[str, str]],
            order: list[tuple[str, bool]]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Rows and their values in ``-S`` order (stable: the views' order breaks ties)."""
    pairs = list(zip(rows, values, strict=True))
    for letter, descending in reversed(order):  # the first key sorts last: it wins
        key = "job_id_raw" if letter == "i" else SQUEUE_CODES[letter][0]  # 12_3 as 12's

        def value(pair: tuple[dict[str, Any], dict[str, str]], key: str = key,
                  letter: str = letter) -> Any:
            text = pair[1].get(key, "")
            if letter in _SORT_NUMBERS:
                return int(text) if text.lstrip("-").isdecimal() else 0
            return text

        pairs.sort(key=value, reverse=descending)
    return [r for r, _ in pairs], [v for _, v in pairs]


def array_bases(client: Client, rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Array SLUID → the array's job id (its first task's: the views resolve an array's SLUID
    to that task)."""
    bases: dict[str, int] = {}
    for row in rows:
        sluid = str(row.get("array_job_sluid", ""))
        if sluid and sluid not in bases:
            try:
                bases[sluid] = int(client.get(f"/v1/jobs/{sluid}")["job"]["job_id"])
            except (ApiError, KeyError):
                bases[sluid] = int(row["job_id"])
    return bases


def user_names(names: str) -> tuple[str, list[str]]:
    """``-u``'s comma list as user names (a uid is the name it belongs to: squeue takes both),
    and the names this host's user database does not know."""
    import pwd

    found, unknown = [], []
    for name in filter(None, (n.strip() for n in names.split(","))):
        try:
            found.append(pwd.getpwuid(int(name)).pw_name if name.isdigit()
                         else pwd.getpwnam(name).pw_name)
        except (KeyError, OverflowError):
            found.append(name)
            unknown.append(name)
    return ",".join(found), unknown


def _job_refs(text: str) -> list[str]:
    """``-j``'s comma list as job references (scancel's forms: ``12``, ``12_3``, ``12_[1-3]``,
    ``12.0``, a SLUID); ValueError ``Invalid job id: WORD`` for anything else, as squeue."""
    from cli.job_control import expand_job_refs

    if not text:
        return []
    try:
        return [ref.partition(".")[0] for ref in expand_job_refs([text])]
    except ValueError:
        bad = [w for w in text.split(",") if not _valid(w, expand_job_refs)]
        raise ValueError(f"Invalid job id: {bad[0] if bad else text}") from None


def _valid(word: str, check: Any) -> bool:
    try:
        check([word])
    except ValueError:
        return False
    return True


def _known(client: Client, rows: list[dict[str, Any]], ref: str) -> bool:
    """Whether the views know the job ``ref`` names, ended or not. squeue given one job id asks
    slurmctld for that job alone, and a job it does not know is an error (exit 1); with several
    ids it lists every job and keeps those, so unknown ones are no error."""
    if any(ref in job_names(row, {}) for row in rows):
        return True
    try:
        client.job(ref)
    except ApiUnavailableError:
        raise
    except ApiError:
        return False
    return True


def _asked_of_shards(start: bool, layout: list[Any], client: Client,
                     rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with what only the shards know now: ``--start``'s planned starts (N/A
    without one), and for ``%Q``/``%p`` (``-O Priority``) the pending jobs' priorities now."""
    if start:
        plans, warning = planned_starts(client)
        rows = with_plans(rows, plans)
        if warning:
            print(f"sluice queue: {warning}", file=sys.stderr)
    if any(getattr(c, "key", "") == "priority" for c in layout) and any(
            r.get("state") == "PENDING" for r in rows):
        rows, warning = with_priorities(client, rows)
        if warning:
            print(f"sluice queue: {warning}", file=sys.stderr)
    return rows


def run_queue(args: argparse.Namespace, settings: Settings) -> int:
    try:
        wanted = state_filter(args.states, "-t") if args.states else None
        if args.field_format:
            # squeue -O: each column padded to its width (20 by default), no separator
            layout: list[Any] = list(parse_field_list(args.field_format, SQUEUE_FIELDS, "-O",
                                                      ":"))
        else:
            default = (START_FORMAT if args.start else LONG_FORMAT if args.long
                       else DEFAULT_FORMAT)
            layout = parse_percent(args.format or default, SQUEUE_CODES, "-o")
        order = _sort_keys(args.sort or ("S" if args.start else DEFAULT_SORT))
    except ValueError as error:
        print(f"sluice queue: {error}", file=sys.stderr)
        return 2
    try:
        refs = _job_refs(args.jobs)
    except ValueError as error:  # squeue: "squeue: error: Invalid job id: abc", exit 1
        print(f"sluice queue: error: {error}", file=sys.stderr)
        return 1
    users = real_user() if args.me else args.user
    users, unknown = user_names(users)
    include_ended = bool(args.states and wanted is None) or any(
        s not in _ACTIVE for s in wanted or ())
    query = {"user": users, "account": args.account, "partition": args.partition,
             "all": "1" if include_ended else ""}
    client = Client(settings)
    answer = client.get("/v1/jobs?" + "&".join(f"{k}={v}" for k, v in query.items() if v))
    try:
        rows = select_rows(answer["jobs"], args, wanted, include_ended)
    except ValueError as error:
        print(f"sluice queue: -w: {error}", file=sys.stderr)
        return 2
    if len(refs) == 1 and not _known(client, answer["jobs"], refs[0]):
        print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
        return 1
    owners = {row.get("user") for row in answer["jobs"]}
    strangers = [name for name in unknown if name not in owners]
    if strangers:  # squeue's "Invalid user"; a name only the cluster knows (its jobs) is one
        print(f"sluice queue: error: Invalid user: {strangers[0]}", file=sys.stderr)
        return 1
    rows = _asked_of_shards(args.start, layout, client, rows)
    if args.json:
        print(json.dumps({**answer, "jobs": rows}, indent=2))
        return 0
    now_ms = int(time.time() * 1000)
    bases = array_bases(client, rows)
    values = [job_values(j, now_ms, bases) for j in rows]
    if order:
        rows, values = _sorted(rows, values, order)
    if not args.array:
        values = fold_pending_tasks(rows, values)
    if args.long:
        print(time.strftime("%a %b %d %H:%M:%S %Y"))
    for line in render(values, layout, header=not args.noheader):
        print(line)
    fresh = answer.get("freshness", {})
    if fresh.get("lag_records"):
        print(f"(views are {fresh['lag_records']} ledger records behind)", file=sys.stderr)
    return 0

