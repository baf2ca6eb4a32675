"""Slurm's output controls, shared by ``queue`` (squeue), ``nodes`` (sinfo) and ``history``
(sacct): format strings, field lists, columns and Slurm's time formats.

- squeue/sinfo ``-o``: ``%[.][size]code`` items between literal text; ``.`` right-justifies,
  a size pads and truncates to that width, ``#`` (sinfo) is the widest value's width;
- squeue ``-O``: ``Name[:[.]size]`` comma list (default width 20, left-justified);
- sacct ``--format``: ``Name[%size]`` comma list (a negative size left-justifies; a longer
  value is cut and ends in ``+``, as sacct does).

Times are Slurm's: ``2026-12-02T04:18:34`` (local time), squeue's ``M:SS``/``H:MM:SS``/
``D-HH:MM:SS`` durations and sacct's ``HH:MM:SS``/``D-HH:MM:SS``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cli.timefmt import format_duration
from scheduler.topology.hostlist import HostlistError, compress
from schemas.digits import ascii_whole

__all__ = [
    "AUTO",
    "Column",
    "elapsed",
    "gres",
    "mem_size",
    "parse_field_list",
    "parse_percent",
    "render",
    "slurm_time",
    "time_limit",
]

AUTO = -1
"""A column as wide as its widest value (sinfo's ``%#P``)."""

_PERCENT = re.compile(r"%(\.)?(#|\d*)([A-Za-z])")
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
MAX_WIDTH = 4096
"""The widest column a size may ask for (a size of 10^11 padded every cell to 100 GB)."""


def _size(digits: str, item: str, option: str) -> int:
    """A column's size: ASCII digits, at most :data:`MAX_WIDTH`; ValueError otherwise."""
    size = ascii_whole(digits, len(str(MAX_WIDTH)))
    if size is None or size > MAX_WIDTH:
        raise ValueError(f"{option}: {item!r}: the size must be a whole number of at most "
                         f"{MAX_WIDTH}")
    return size


@dataclass(frozen=True, slots=True)
class Column:
    """One output column: the key of its value, its header, width (0: as is) and justification."""

    key: str
    header: str
    width: int = 0
    right: bool = False


Layout = list[str | Column]
"""Columns with the literal text between them."""


def parse_percent(fmt: str, codes: Mapping[str, tuple[str, str]], option: str) -> Layout:
    """A ``%``-format (``codes``: letter → (key, header)); ValueError names an unknown code.
    ``%all`` (any case) is every field, ``a``-``z`` then ``A``-``Z``, ``|`` between them, as
    squeue and sinfo build it."""
    if fmt.lower() == "%all":
        fmt = "|".join(f"%{c}" for c in _LETTERS if c in codes)
    layout: Layout = []
    pos = 0
    for match in _PERCENT.finditer(fmt):
        if match.start() > pos:
            layout.append(fmt[pos:match.start()])
        dot, size, code = match.groups()
        if code not in codes:
            raise ValueError(f"{option} {fmt!r}: unknown field %{code} (known: "
                             f"{' '.join('%' + c for c in sorted(codes))})")
        key, header = codes[code]
        width = AUTO if size == "#" else _size(size, match.group(), option) if size else 0
        layout.append(Column(key, header, width, bool(dot)))
        pos = match.end()
    if pos < len(fmt):
        layout.append(fmt[pos:])
    return layout


def parse_field_list(text: str, fields: Mapping[str, tuple[str, str, int, bool]], option: str,
                     sep: str) -> list[Column]:
    """A ``Name[sep[.]size]`` list (``fields``: lower-case name → (key, header, default width,
    right-justified)); ValueError names an unknown field."""
    columns = []
    for item in filter(None, (i.strip() for i in text.split(","))):
        name, _, size = item.partition(sep)
        known = fields.get(name.lower())
        if known is None:
            raise ValueError(f"{option}: unknown field {name!r} (known: "
                             f"{', '.join(sorted(h for _, h, _, _ in fields.values()))})")
        key, header, width, right = known
        if size:
            if size.startswith("."):
                right = True
            elif size.startswith("-"):
                right = False
            width = _size(size.lstrip(".-"), item, option)
        columns.append(Column(key, header, width, right))
    if not columns:
        raise ValueError(f"{option}: no field named")
    return columns


_CONTROLS = dict.fromkeys((*range(32), *range(127, 160)), "?")
"""C0 and C1 control characters, and DEL: shown as ``?`` in a table, so a job name, comment or
reason holding a newline keeps one row a line, and one holding terminal escapes (another
user's, read by an administrator's ``squeue``) moves no cursor and sets no title."""


def shown(value: str) -> str:
    """``value`` as a table cell shows it: control characters replaced by ``?``."""
    return value.translate(_CONTROLS) if not value.isprintable() else value


def render(rows: Sequence[Mapping[str, str]], layout: Layout, *, header: bool = True,
           delimiter: str | None = None, trailing: bool = False, cut_mark: str = "",
           dashes: bool = False, end: str = "") -> list[str]:
    """The lines of a table: a header (optional), a line of dashes (sacct), then one per row.

    With ``delimiter`` (sacct ``-P``/``-p``) the values are joined by it, unpadded, and
    ``trailing`` adds one at the end of each line. ``end`` ends every padded line (sacct's
    trailing space)."""
    columns = [c for c in layout if isinstance(c, Column)]
    rows = [{key: shown(str(value)) for key, value in row.items()} for row in rows]
    if delimiter is not None:
        lines = [delimiter.join(c.header for c in columns)] if header else []
        lines += [delimiter.join(row.get(c.key, "") for c in columns) for row in rows]
        return [line + delimiter if trailing else line for line in lines]
    widths = {id(c): _width(c, rows) for c in columns}

    def line(cells: Mapping[int, str]) -> str:
        parts = []
        for item in layout:
            if isinstance(item, str):
                parts.append(item)
                continue
            parts.append(_fit(cells[id(item)], widths[id(item)], item.right, cut_mark))
        return "".join(parts) + end

    lines = []
    if header:
        lines.append(line({id(c): c.header for c in columns}))
        if dashes:
            lines.append(line({id(c): "-" * widths[id(c)] for c in columns}))
    lines += [line({id(c): row.get(c.key, "") for c in columns}) for row in rows]
    return lines


def _width(column: Column, rows: Sequence[Mapping[str, str]]) -> int:
    if column.width != AUTO:
        return column.width
    return max([len(column.header), *(len(row.get(column.key, "")) for row in rows)])


def _fit(value: str, width: int, right: bool, cut_mark: str) -> str:
    if width <= 0:
        return value
    if len(value) > width:
        value = value[: width - len(cut_mark)] + cut_mark if cut_mark else value[:width]
    return value.rjust(width) if right else value.ljust(width)


def slurm_time(ms: int, none: str = "N/A") -> str:
    """Slurm's time format, ``YYYY-MM-DDTHH:MM:SS`` in local time; ``none`` when unset or
    past what the C library can show (a forged fact's 2^62 ms raised ``OverflowError``)."""
    if ms <= 0:
        return none
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ms / 1000))
    except (OverflowError, OSError, ValueError):
        return none


def host_list(names: Iterable[str]) -> str:
    """The names as a host list (``n[1-4]``), or joined by commas when one of them cannot be
    written in a host list: a forged fact (any client may write the ledger in PLAINTEXT mode)
    naming a node ``bad,name`` made every user's ``squeue`` and ``sacct`` stop with
    ``name 'bad,name' cannot be written in a host list`` (red team). The core refuses such a
    name at registration."""
    listed = list(names)
    try:
        return compress(listed)
    except HostlistError:
        return ",".join(listed)


def elapsed(seconds: int) -> str:
    """sacct's Elapsed: ``HH:MM:SS``, or ``D-HH:MM:SS`` from a day on."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def time_limit(seconds: int, sacct: bool = False) -> str:
    """A time limit as squeue (``1:00:00``) or sacct (``01:00:00``) shows it; 0 = UNLIMITED."""
    if seconds <= 0:
        return "UNLIMITED"
    return elapsed(seconds) if sacct else format_duration(seconds)


def gres(gpu_type: object, gpus: int) -> str:
    """A GPU count as Slurm's GRES text: ``gpu:4`` or ``gpu:h100:4``."""
    return f"gpu:{gpu_type}:{gpus}" if gpu_type else f"gpu:{gpus}"


_UNITS = "KMGTP"


def mem_size(mb: int) -> str:
    """A size in MB as Slurm's commands print it (``convert_num_unit`` with
    ``CONVERT_NUM_UNIT_EXACT``, squeue's, sinfo's, sacct's and scontrol's default): ``0``,
    ``100M``, ``1G``; up a unit only while the value stays whole or a half (``1536M`` →
    ``1.50G``; ``2000M`` stays)."""
    if mb <= 0:
        return "0"
    num, unit = float(mb), 2  # _UNITS[unit - 1]: M
    while num >= 1024 and int(num) % 512 == 0:
        num /= 1024
        unit += 1
    mark = _UNITS[unit - 1] if unit <= len(_UNITS) else "?"
    return f"{int(num)}{mark}" if num == int(num) else f"{num:.2f}{mark}"
