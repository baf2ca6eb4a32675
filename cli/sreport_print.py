"""How sreport prints: its time formats, its fields and its table (Slurm's ``print_fields``).

- ``-t``: ``SecPer``, ``MinPer``, ``HourPer``, ``Seconds``, ``Minutes`` (the default),
  ``Hours``, ``Percent``, any case, abbreviated as sreport reads them (the ``*Per`` ones
  whole, ``s`` is ``Seconds``);
  minutes and hours are rounded (``%.0f``), a percentage has two decimals;
- a table: each field right-justified in its width and followed by a space, the header cut to
  the width, a line of dashes under it; a value too long ends in ``+``. With ``-p``/``-P``
  fields are ``|``-separated (``-p`` also ends each line with one), without the dashes;
- a usage column is 8 wide (9 for 100,000,000 seconds and more, and so on, +9 with a
  ``*Per`` format), as ``sreport_set_usage_col_width``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["TIME_FORMATS", "Field", "TimeFormat", "amount", "table", "time_format",
           "usage_width"]


@dataclass(frozen=True, slots=True)
class TimeFormat:
    """A ``-t`` format: its words in the banner, its unit in seconds (0: a percentage
    alone) and whether a percentage follows the amount."""

    words: str
    unit: int
    percent: bool


TIME_FORMATS: tuple[tuple[str, int, TimeFormat], ...] = (
    ("secper", 6, TimeFormat("Seconds/Percentage of Total", 1, percent=True)),
    ("minper", 6, TimeFormat("Minutes/Percentage of Total", 60, percent=True)),
    ("hourper", 6, TimeFormat("Hours/Percentage of Total", 3600, percent=True)),
    ("seconds", 1, TimeFormat("Seconds", 1, percent=False)),
    ("minutes", 1, TimeFormat("Minutes", 60, percent=False)),
    ("hours", 1, TimeFormat("Hours", 3600, percent=False)),
    ("percent", 1, TimeFormat("Percentage of Total", 0, percent=True)),
)
"""sreport's ``-t`` names in the order it tries them, with the letters each needs at least."""
MINUTES = TIME_FORMATS[4][2]


def time_format(text: str) -> TimeFormat:
    """The ``-t`` format ``text`` names; ValueError when none."""
    value = text.lower()
    for name, least, form in TIME_FORMATS:
        if len(value) >= least and name.startswith(value):
            return form
    raise ValueError(f"unknown time format {text}")


def amount(seconds: int, total: int, form: TimeFormat) -> str:
    """``seconds`` as ``form`` prints it (a percentage of ``total``)."""
    share = 100.0 * seconds / (total or 1)
    if form.unit == 0:
        return f"{share:.2f}%"
    value = str(seconds) if form.unit == 1 else f"{seconds / form.unit:.0f}"
    return f"{value}({share:.2f}%)" if form.percent else value


def usage_width(largest_seconds: int, form: TimeFormat) -> int:
    """The width of a usage column whose largest amount is ``largest_seconds``."""
    width, order = 8, 100_000_000
    while largest_seconds >= order and width < 25:
        width += 1
        order *= 10
    return width + (9 if form.percent and form.unit else 0)


@dataclass(frozen=True, slots=True)
class Field:
    """A printed field: its header and width (a negative width is left-justified)."""

    header: str
    width: int


def table(fields: Sequence[Field], rows: Sequence[Sequence[str]], *, header: bool = True,
          delimiter: str | None = None, trailing: bool = False) -> list[str]:
    """The lines of one table (see the module docstring)."""
    if delimiter is not None:
        lines = [[f.header for f in fields]] if header else []
        lines += [list(row) for row in rows]
        return [delimiter.join(line) + (delimiter if trailing else "") for line in lines]
    out = []
    if header:
        out.append("".join(_cell(f.header, f, cut="") for f in fields))
        out.append("".join(_cell("-" * abs(f.width), f, cut="") for f in fields))
    out += ["".join(_cell(value, f, cut="+") for value, f in zip(row, fields, strict=True))
            for row in rows]
    return out


def _cell(value: str, field: Field, *, cut: str) -> str:
    size = abs(field.width)
    if len(value) > size:
        value = value[:size - len(cut)] + cut if cut else value[:size]
    return (value.rjust(size) if field.width > 0 else value.ljust(size)) + " "
