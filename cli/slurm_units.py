"""Slurm's unit and time syntaxes for ``sluice submit`` options, as argparse ``type`` functions.

- memory (``--mem``, ``--mem-per-cpu``): a whole number with an optional unit ``K``, ``M``
  (the default), ``G`` or ``T`` (powers of 1024; ``4G`` is 4096 MB), as sbatch reads it;
- node counts (``-N``): ``N`` or ``MIN-MAX``;
- begin times (``--begin``): ``now``, ``now+N`` (``now-N`` for sacct's ``-S``) with
  ``seconds`` (the default), ``minutes``, ``hours``, ``days`` or ``weeks``; ``today``,
  ``tomorrow``, ``midnight``, ``noon``, ``fika`` (15:00), ``teatime`` (16:00);
  ``HH:MM[:SS]`` (today, or tomorrow once passed); ISO ``YYYY-MM-DD[THH:MM[:SS]]``;
  ``MM/DD[/YY]``. Local time, as Slurm. The shell resolves the text against its own clock
  to an absolute Unix time in ms (the core never reads a clock).

Every parser raises :class:`argparse.ArgumentTypeError` naming the accepted forms, so a bad value
is a usage error (exit 2), never a traceback.
"""

from __future__ import annotations

import argparse
import re

from schemas.digits import ascii_whole

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from datetime import datetime


__all__ = [
    "begin_ms", "count", "mail_types", "mem_mb", "node_range", "parse_begin", "signal_number",
    "signal_spec",
]

_MEM = re.compile(r"(\d{1,19})\s*([KMGT]?)(?:I?B)?", re.IGNORECASE | re.ASCII)
_FACTOR = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}
_UNITS = {
    "seconds": 1, "minutes": 60, "hours": 3600, "days": 86_400, "weeks": 604_800,
}
_NAMED = {"midnight": (0, 0), "noon": (12, 0), "fika": (15, 0), "teatime": (16, 0)}


def mem_mb(text: str) -> int:
    """MB for a Slurm memory size: ``512``, ``4G``, ``1024K``, ``2T`` (K rounds up to 1 MB)."""
    match = _MEM.fullmatch(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(
            f"invalid memory size {text!r}: use a whole number with an optional unit K, M, G "
            "or T (e.g. 4G; the default unit is M)"
        )
    value, unit = int(match.group(1)), match.group(2).upper()
    if unit == "K":
        return -(-value // 1024)
    return int(value * _FACTOR[unit])


def count(text: str) -> int:
    """A whole number of tasks, CPUs or GPUs (not negative)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid count {text!r}: expected a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: negative")
    return value


_MAIL_TYPES = frozenset({
    "NONE", "BEGIN", "END", "FAIL", "REQUEUE", "ALL", "INVALID_DEPEND", "STAGE_OUT",
    "TIME_LIMIT", "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS",
})


def mail_types(text: str) -> str:
    """``--mail-type``: a comma list of Slurm's types (recorded as given, upper case)."""
    if not text.strip():
        return ""
    types = [t.strip().upper() for t in text.split(",")]
    unknown = [t for t in types if t not in _MAIL_TYPES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"invalid --mail-type {text!r}: {', '.join(unknown)} (use "
            f"{', '.join(sorted(_MAIL_TYPES))})"
        )
    return ",".join(types)


def signal_spec(text: str) -> str:
    """``--signal=[{R|B}:]SIG[@SECONDS]`` (a name such as USR1 or a number 1-64, SECONDS
    0-65535), kept as given: the shard parses it again (scheduler.jobs.signal_names)."""
    if not text.strip():
        return ""
    from scheduler.jobs.signal_names import parse_signal_spec  # here: ~1 ms, --signal only

    if parse_signal_spec(text) is None:
        raise argparse.ArgumentTypeError(
            f"invalid --signal {text!r}: use [B:]SIGNAL[@SECONDS], e.g. B:USR1@120"
        )
    return text.strip()


def signal_number(text: str) -> int:
    """``scancel -s``: a signal name (``USR1``, ``SIGUSR1``) or number 1-64."""
    from scheduler.jobs.signal_names import parse_signal  # here: ~1 ms, cancel -s only

    number = parse_signal(text)
    if number is None:
        raise argparse.ArgumentTypeError(
            f"invalid signal {text!r}: use a name such as USR1 or TERM, or a number 1-64")
    return number


def node_range(text: str) -> tuple[int, int]:
    """``-N``: ``N`` → (N, 0); ``MIN-MAX`` → (MIN, MAX)."""
    low_text, sep, high_text = text.strip().partition("-")
    low, high = ascii_whole(low_text), ascii_whole(high_text) if sep else 0
    if low is None or high is None:
        raise argparse.ArgumentTypeError(
            f"invalid node count {text!r}: expected N or MIN-MAX (whole numbers)"
        )
    return low, high


def node_counts(given: tuple[int, int] | str | int | None) -> tuple[int, int]:
    """``-N`` (``node_range``'s pair, or its text) as the spec's (nodes_min, nodes_max); raises
    ValueError. Without ``-N`` the spec's default (1, 0), whose count the shard derives from
    the tasks (``scheduler.jobs.node_count``); ``-N 1`` is sent as 1-1, so it stays exact."""
    if given is None:
        return 1, 0
    if isinstance(given, tuple):
        low, high = given
    else:
        try:
            low, high = node_range(str(given))
        except argparse.ArgumentTypeError as error:
            raise ValueError(str(error)) from None
    return (1, 1) if (low, high) == (1, 0) else (low, high)


def begin_ms(text: str) -> int:
    """``--begin`` as argparse's type: the begin time in Unix ms against this host's clock
    (``datetime`` is imported here: a ``sluice submit`` without ``--begin`` does not need it)."""
    from datetime import datetime

    try:
        return parse_begin(text, datetime.now().astimezone())
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parse_begin(text: str, now: datetime, past: bool = False) -> int:
    """The begin time ``text`` means at ``now`` (an aware local datetime), in Unix ms; raises
    ValueError naming the accepted forms. A time of day, or a date without a year, is the next
    one (``--begin``), or with ``past`` (sacct's ``-S``/``-E``, Slurm's ``parse_time(text,
    1)``) today's, and this year's unless its month is still to come (then last year's)."""
    value = text.strip().lower()
    relative = re.fullmatch(r"now(?:\s*([+-])\s*(\d{1,19})\s*([a-z]*))?", value, re.ASCII)
    if relative:
        sign = -1 if relative.group(1) == "-" else 1
        amount, unit = int(relative.group(2) or 0), relative.group(3) or ""
        return _ms(now) + 1000 * sign * amount * _unit(unit, text)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if value == "today":
        return _ms(midnight)
    if value == "tomorrow":
        return _ms(_add_days(midnight, 1))
    if value in _NAMED:
        hour, minute = _NAMED[value]
        named = midnight.replace(hour=hour, minute=minute)
        return _ms(named if past else _next(now, named))
    clock = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(am|pm)?", value, re.ASCII)
    if clock:
        hour, minute, second = int(clock.group(1)), int(clock.group(2)), int(clock.group(3) or 0)
        if clock.group(4):
            hour = hour % 12 + (12 if clock.group(4) == "pm" else 0)
        today = _at(midnight, hour, minute, second, text)
        return _ms(today if past else _next(now, today))
    iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?:[t ](\d{2}):(\d{2})(?::(\d{2}))?)?", value,
                       re.ASCII)
    if iso:
        year, month, day, hour, minute, second = (int(g or 0) for g in iso.groups())
        try:
            when = now.replace(year=year, month=month, day=day)
        except ValueError:
            raise ValueError(f"invalid begin time {text!r}: no such date") from None
        return _ms(_at(when, hour, minute, second, text))
    slashed = re.fullmatch(r"(\d{1,2})[/.](\d{1,2})(?:[/.](\d{2}))?", value, re.ASCII)
    if slashed:
        month, day = int(slashed.group(1)), int(slashed.group(2))
        year = 2000 + int(slashed.group(3)) if slashed.group(3) else (
            now.year - 1 if past and month > now.month else now.year)
        try:
            when = midnight.replace(year=year, month=month, day=day)
        except ValueError:
            raise ValueError(f"invalid begin time {text!r}: no such date") from None
        if not slashed.group(3) and not past and when < midnight:
            when = when.replace(year=year + 1)
        return _ms(when)
    raise ValueError(
        f"invalid begin time {text!r}: use now, now+N[seconds|minutes|hours|days|weeks], "
        "today, tomorrow, midnight, noon, HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]] or MM/DD[/YY]"
    )


def _unit(unit: str, text: str) -> int:
    if not unit:
        return 1
    for name, seconds in _UNITS.items():  # any prefix: s, sec, min, h, hour, d, day, w
        if name.startswith(unit):
            return seconds
    raise ValueError(
        f"invalid begin time {text!r}: unknown unit {unit!r} (seconds, minutes, hours, days, "
        "weeks)"
    )


def _at(day: datetime, hour: int, minute: int, second: int, text: str) -> datetime:
    try:
        return day.replace(hour=hour, minute=minute, second=second, microsecond=0)
    except ValueError:
        raise ValueError(f"invalid begin time {text!r}: no such time of day") from None


def _next(now: datetime, when: datetime) -> datetime:
    """A time of day already passed today means tomorrow's (Slurm's rule)."""
    return when if when >= now else _add_days(when, 1)


def _add_days(when: datetime, days: int) -> datetime:
    from datetime import timedelta

    return when + timedelta(days=days)


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)
