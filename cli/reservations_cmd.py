"""Slurm's advanced reservations at the command line: ``scontrol create|update|delete
reservation``, ``scontrol show reservation[s] [NAME]`` and ``sinfo -T``, with scontrol's words.

A create or update is one ``CreateReservation`` (a delete one ``DeleteReservation``) named by a
SLUID of the client's; the command waits for the views to show the shards' answer: the
reservation as the fact set it, or a ``RequestDenied`` whose detail starts with Slurm's words
(``Error creating the reservation: Requested nodes are busy``). Times: ``StartTime=now[+N
units]`` and ``EndTime=now+N`` are sent relative (the shard adds them to its record time),
other times (``YYYY-MM-DD[THH:MM[:SS]]``, ``HH:MM``, ``tomorrow``, ...) as this host's local
time; ``Duration`` as Slurm's time limits (minutes, ``HH:MM:SS``, ``D-HH:MM:SS``).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from cli.client import ApiError, Client
from cli.formats import elapsed, host_list, slurm_time
from cli.submit import real_user
from cli.timefmt import parse_time_limit
from streams.settings import Settings

__all__ = ["RESV_HEADER", "active_marks", "change_reservation", "delete_reservation",
           "reservation_lines", "reservation_rows", "show_reservations", "sinfo_reservations"]

WAIT_S = 30.0
UNCHANGED_S = 5.0
"""An update that changes nothing decides nothing: after this long without a refusal the
command says it is updated, as scontrol does for the same values."""
_FIELDS = {"reservationname": "name", "reservation": "name", "starttime": "start",
           "endtime": "end", "duration": "duration", "nodes": "nodes", "nodecnt": "node_cnt",
           "users": "users", "accounts": "accounts", "flags": "flags"}
_RELATIVE = re.compile(r"now(?:\s*\+\s*(\d{1,12})\s*([a-z]*))?", re.ASCII | re.IGNORECASE)
_UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86_400, "weeks": 604_800}
RESV_HEADER = ("RESV_NAME", "STATE", "START_TIME", "END_TIME", "DURATION", "NODELIST")
_YEAR_S = 365 * 24 * 3600
"""``Duration=UNLIMITED``: slurmctld ends such a reservation a year after its start."""


def change_reservation(words: Sequence[str], settings: Settings, *, update: bool) -> int:
    """``scontrol create reservation KEY=VALUE…`` (``update``: ``scontrol update
    ReservationName=NAME KEY=VALUE…``)."""
    verb = "updating" if update else "creating"
    try:
        record = _record(words, update)
    except ValueError as error:
        print(f"Error {verb} the reservation: {error}", file=sys.stderr)
        return 1
    client = Client(settings)
    edits = record.pop("edits", [])
    if edits:
        rows = reservation_rows(client)
        try:
            _apply_edits(record, edits, next((r for r in rows if r["name"] == record["name"]),
                                             None))
        except ValueError as error:
            print(f"Error {verb} the reservation: {error}", file=sys.stderr)
            return 1
    sluid = client.sluids.new()
    record["request_sluid"] = sluid
    client.send(sluid, "CreateReservation", record)

    def ours() -> dict[str, Any] | None:
        return next((r for r in reservation_rows(client) if r.get("request_sluid") == sluid),
                    None)

    denial = client.await_decision(sluid, "CreateReservation", set(), lambda: ours() is not None,
                                   timeout_s=UNCHANGED_S if update else WAIT_S)
    if denial is not None:
        print(f"Error {verb} the reservation: {denial['detail']}", file=sys.stderr)
        return 1
    if update:  # shown as set, or no refusal: an update that changes nothing decides nothing
        print("Reservation updated.")
        return 0
    row = ours()
    if row is None:
        print(f"Error {verb} the reservation: no answer from the cluster in {WAIT_S:.0f} s",
              file=sys.stderr)
        return 1
    print(f"Reservation created: {row['name']}")
    return 0


def delete_reservation(words: Sequence[str], settings: Settings) -> int:
    """``scontrol delete ReservationName=NAME``: prints nothing when done."""
    fields = {k.lower(): v for k, sep, v in (w.partition("=") for w in words) if sep}
    name = fields.get("reservationname") or fields.get("reservation", "")
    tag = " ".join(words)
    if not name:
        print("scontrol: delete ReservationName=NAME", file=sys.stderr)
        return 2
    client = Client(settings)
    sluid = client.sluids.new()
    client.send(sluid, "DeleteReservation", {"request_sluid": sluid, "name": name,
                                             "user": real_user()})
    def gone() -> bool:
        return all(row["name"] != name for row in reservation_rows(client))

    denial = client.await_decision(sluid, "DeleteReservation", set(), gone, timeout_s=WAIT_S)
    if denial is not None:
        print(f"delete_reservation {tag}: {denial['detail']}", file=sys.stderr)
        return 1
    if gone():
        return 0
    print(f"delete_reservation {tag}: no answer from the cluster in {WAIT_S:.0f} s",
          file=sys.stderr)
    return 1


def show_reservations(names: Sequence[str], settings: Settings) -> int:
    """``scontrol show reservation[s] [NAME]``."""
    client = Client(settings)
    rows = reservation_rows(client)
    if names:
        rows = [row for row in rows if row["name"] == names[0]]
        if not rows:
            print(f"Reservation {names[0]} not found", file=sys.stderr)
            return 1
    if not rows:
        print("No reservations in the system")
        return 0
    cpus = {str(n["name"]): int(n.get("cpus") or 0) for n in client.get("/v1/nodes")["nodes"]}
    now = int(time.time() * 1000)
    print("\n\n".join("\n".join(reservation_lines(row, cpus, now)) for row in rows))
    return 0


def sinfo_reservations(settings: Settings, header: bool = True) -> int:
    """``sinfo -T``: one line per reservation."""
    rows = reservation_rows(Client(settings))
    now = int(time.time() * 1000)
    lines = [RESV_HEADER] if header else []
    for row in rows:
        start, end = int(row["start_ms"]), int(row["end_ms"])
        lines.append((row["name"], "ACTIVE" if start <= now < end else "INACTIVE",
                      slurm_time(start), slurm_time(end), elapsed((end - start) // 1000),
                      host_list(list(row["nodes"])) or "(null)"))
    for name, state, start_text, end_text, duration, nodes in lines:
        print(f"{name:<13}{state:>8}  {start_text:>19}  {end_text:>19}  {duration:>11}  {nodes}")
    return 0


def reservation_lines(row: Mapping[str, Any], cpus: Mapping[str, int], now_ms: int) -> list[str]:
    """scontrol's lines for one reservation row."""
    start, end = int(row["start_ms"]), int(row["end_ms"])
    nodes = list(row["nodes"])
    cores = sum(cpus.get(n, 0) for n in nodes)
    state = "ACTIVE" if start <= now_ms < end else "INACTIVE"
    null = "(null)"
    return [
        f"ReservationName={row['name']} StartTime={slurm_time(start)} "
        f"EndTime={slurm_time(end)} Duration={elapsed((end - start) // 1000)}",
        f"   Nodes={host_list(nodes) or null} NodeCnt={len(nodes)} CoreCnt={cores} "
        f"Features={null} PartitionName={null} Flags={','.join(row['flags']) or null}",
        f"   TRES=cpu={cores}",
        f"   Users={','.join(row['users']) or null} Groups={null} "
        f"Accounts={','.join(row['accounts']) or null} Licenses={null} State={state} "
        f"BurstBuffer={null}",
        f"   MaxStartDelay={null}",
    ]


def active_marks(reservations: Sequence[Mapping[str, Any]], now_ms: int) -> dict[str, str]:
    """Node name → ``MAINT`` (in an active MAINT reservation) or ``RESERVED`` (in another
    active one): the flags sinfo and scontrol show."""
    marks: dict[str, str] = {}
    for row in reservations:
        if int(row["start_ms"]) <= now_ms < int(row["end_ms"]):
            mark = "MAINT" if "MAINT" in row.get("flags", []) else "RESERVED"
            for name in row["nodes"]:
                if marks.get(name) != "MAINT":
                    marks[name] = mark
    return marks


def reservation_rows(client: Client) -> list[dict[str, Any]]:
    """The views' reservations (none when the views cannot say)."""
    try:
        return list(client.get("/v1/reservations")["reservations"])
    except (ApiError, KeyError):
        return []


def _record(words: Sequence[str], update: bool) -> dict[str, Any]:
    """The ``CreateReservation`` record of scontrol's ``KEY=VALUE`` words (ValueError: what
    is wrong, in scontrol's manner)."""
    record: dict[str, Any] = {"update": update, "user": real_user(),
                              "name": ""}  # create without one: the shard names it USER_N
    for word in words:
        key, sep, value = word.partition("=")
        field = _FIELDS.get(key.lower().rstrip("+-"))
        if not sep or field is None:
            raise ValueError(f"{word}: Sluice builds ReservationName, StartTime, EndTime, "
                             "Duration, Nodes, NodeCnt, Users, Accounts and Flags")
        if key.endswith(("+", "-")) and update and field in _EDITABLE:
            items = [part for part in value.split(",") if part]
            if not items:
                raise ValueError(f"{word}: name what to add or remove")
            record.setdefault("edits", []).append((field, key[-1], items))
            continue
        if key.endswith(("+", "-")) or (value.startswith(("+", "-")) and field != "start"):
            raise ValueError(f"{word}: adding or removing is built for an update's Users, "
                             "Accounts and Flags (Users+=NAME, Users-=NAME); Users=-NAME "
                             "(everyone but NAME) is not: give the whole list")
        _set(record, field, value)
    if update and not record.get("name"):
        raise ValueError("ReservationName= must be given")
    return record


_FLAG_ALIASES = {"NO_HOLD_JOBS_AFTER": "NO_HOLD_JOBS_AFTER_END"}
"""scontrol's other spelling of a flag (the shard's ``FLAG_ALIASES``; not imported: the
scheduler's records are no import of a command)."""
_EDITABLE = ("users", "accounts", "flags")
"""The lists an update may add to or remove from (``Users+=bob``, ``Flags-=MAINT``)."""


def _apply_edits(record: dict[str, Any], edits: list[tuple[str, str, list[str]]],
                 row: Mapping[str, Any] | None) -> None:
    """Turn ``Users+=``/``-=`` (and Accounts, Flags) into the whole lists the record carries,
    from the reservation as the views show it (``row``; ValueError: no such reservation, or a
    list left empty, which the record cannot say: an empty list there keeps the old one).

    Read, changed and sent by this command, not by the shard: two operators editing the same
    list at the same moment each send their own whole list, and the later one wins."""
    if row is None:
        raise ValueError("Requested reservation is invalid")
    for field, sign, named in edits:
        current = list(record.get(field) or row.get(field) or [])
        items = named
        if field == "flags":  # as the shard spells them (scheduler.reservations.model)
            current = [f.upper() for f in current]
            items = [_FLAG_ALIASES.get(f.upper(), f.upper()) for f in named]
        if sign == "+":
            record[field] = list(dict.fromkeys([*current, *items]))
            continue
        absent = [item for item in items if item not in current]
        if absent:
            raise ValueError(f"{field.capitalize()}-={','.join(absent)}: not in the "
                             f"reservation's {field}")
        left = [item for item in current if item not in items]
        if not left:
            raise ValueError(f"{field.capitalize()}-={','.join(items)} would leave no "
                             f"{field[:-1]}: give the whole list with {field.capitalize()}= "
                             "(or delete the reservation)")
        record[field] = left


def _set(record: dict[str, Any], field: str, value: str) -> None:
    if field == "name":
        record["name"] = value
    elif field in ("start", "end"):
        _set_time(record, field, value)
    elif field == "duration":  # UNLIMITED: a year, as slurmctld makes it (YEAR_SECONDS)
        unlimited = value.upper() in ("UNLIMITED", "INFINITE")
        record["duration_s"] = _YEAR_S if unlimited else parse_time_limit(value)
    elif field == "nodes":
        record["nodes"] = value
    elif field == "node_cnt":
        if not value.isdigit() or int(value) <= 0:
            raise ValueError(f"NodeCnt={value}: a whole number of nodes")
        record["node_cnt"] = int(value)
    else:
        record[field] = [part for part in value.split(",") if part]


def _set_time(record: dict[str, Any], field: str, value: str) -> None:
    relative = _RELATIVE.fullmatch(value.strip())
    if relative:
        amount, unit = int(relative.group(1) or 0), (relative.group(2) or "s").lower()
        scale = next((s for name, s in _UNITS.items() if name.startswith(unit)), None)
        if scale is None:
            raise ValueError(f"{value}: unknown unit {unit!r}")
        record[f"{field}_in_s"] = amount * scale
        return
    from datetime import datetime

    from cli.slurm_units import parse_begin

    record[f"{field}_ms"] = parse_begin(value, datetime.now().astimezone())
