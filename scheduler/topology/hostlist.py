"""Slurm host lists: ``n[001-072]``, ``n[1-3,7]``, ``a[01-02]b[1-2]`` ↔ node names.

- :func:`expand` turns a host list into names, in the order written. Several bracket groups
  in one name multiply out, the first group varying slowest (``a[1-2]b[1-2]`` →
  ``a1b1 a1b2 a2b1 a2b2``). A range keeps the zero padding of its low end (``n[08-10]`` →
  ``n08 n09 n10``); a low end without a leading zero means no padding (``n[9-10]``).
- :func:`compress` is the inverse on the last number of each name; by default it sorts the
  names in natural order and drops duplicates first, so ``expand(compress(xs))`` is
  ``natural_sorted(set(xs))``.
- :func:`natural_key` is the one node order Sluice uses when a file does not give one:
  digits compare as numbers (``n9 < n10``), as Slurm's ``_sort_by_name`` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "MAX_HOSTS",
    "HostlistError",
    "compress",
    "expand",
    "is_listable",
    "items_of",
    "natural_key",
    "natural_sorted",
    "parse_range",
]

MAX_HOSTS = 1_000_000
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_LAST_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")
_DIGITS = re.compile(r"(\d+)")
_FORBIDDEN = frozenset("[],")

NaturalKey = tuple[tuple[int, int, int, str], ...]
"""Sort key of a name: digit runs compare by value then width, text runs as text."""


class HostlistError(ValueError):
    """A host list does not parse, or a name cannot be written in one."""


def natural_key(name: str) -> NaturalKey:
    """Key that sorts ``n2`` before ``n10`` and ``n10`` before ``n010``."""
    return tuple(
        (0, int(part), len(part), "") if part.isdigit() else (1, 0, 0, part)
        for part in _DIGITS.split(name)
        if part
    )


def natural_sorted(names: Iterable[str]) -> list[str]:
    """The names in natural order (ties cannot happen: equal keys mean equal names)."""
    return sorted(names, key=natural_key)


def expand(text: str) -> tuple[str, ...]:
    """Expand a host list, in the order written; ``""`` gives ``()``. Duplicates are kept."""
    names: list[str] = []
    for item in _split_top_level(text.strip(), text):
        names.extend(_expand_item(item, text))
        if len(names) > MAX_HOSTS:
            raise HostlistError(f"host list {text!r} names more than {MAX_HOSTS} hosts")
    return tuple(names)


def items_of(text: str) -> list[str]:
    """The top-level items of a host list (``a[1-2],b`` → ``a[1-2]``, ``b``), checked as
    :func:`expand` checks them, not expanded."""
    return _split_top_level(text.strip(), text)


def _split_top_level(text: str, whole: str) -> list[str]:
    items: list[str] = []
    depth = start = 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested '[' in host list {whole!r}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in host list {whole!r}")
        elif char == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    if depth:
        raise HostlistError(f"unbalanced '[' in host list {whole!r}")
    items.append(text[start:].strip())
    for item in items:
        if not item and len(items) > 1:
            raise HostlistError(f"empty name in host list {whole!r}")
        if any(char.isspace() for char in item):
            raise HostlistError(f"space inside name {item!r} in host list {whole!r}")
    return [item for item in items if item]


def _expand_item(item: str, whole: str) -> list[str]:
    open_at = item.find("[")
    if open_at < 0:
        return [item]
    close_at = item.find("]", open_at)
    prefix, body, rest = item[:open_at], item[open_at + 1 : close_at], item[close_at + 1 :]
    tails = _expand_item(rest, whole) if rest else [""]
    names: list[str] = []
    for part in body.split(","):
        low, high, width = parse_range(part, whole)
        if (high - low + 1) * len(tails) > MAX_HOSTS:
            raise HostlistError(f"range {part!r} is too large in host list {whole!r}")
        names.extend(f"{prefix}{n:0{width}d}{tail}" for n in range(low, high + 1) for tail in tails)
    return names


def parse_range(part: str, whole: str) -> tuple[int, int, int]:
    """One range of a bracket group (``08-10``, ``7``): low, high and zero padding (the width
    its numbers are written with, 0 for none); HostlistError for anything else."""
    match = _RANGE.match(part.strip())
    if not match:
        raise HostlistError(f"bad range {part!r} in host list {whole!r}")
    low_text, high_text = match.group(1), match.group(2) or match.group(1)
    low, high = int(low_text), int(high_text)
    if high < low:
        raise HostlistError(f"range {part!r} goes backwards in host list {whole!r}")
    return low, high, _width(low_text)


def _width(low_text: str) -> int:
    """Zero padding of a range: the low end's length when it starts with 0, else none."""
    return len(low_text) if len(low_text) > 1 and low_text.startswith("0") else 0


def is_listable(name: str) -> bool:
    """Whether ``name`` can be written in a host list (what :func:`compress` refuses: empty,
    a ``[``, ``]`` or ``,``, white space)."""
    return bool(name) and not _FORBIDDEN.intersection(name) and not any(
        c.isspace() for c in name)


def compress(names: Iterable[str], *, sort: bool = True) -> str:
    """Write names as a host list, grouping runs of the last number in each name.

    With ``sort`` (the default) the names are deduplicated and put in natural order first;
    without it their order is kept (and repeats are dropped after the first).
    """
    unique = list(dict.fromkeys(names))
    for name in unique:
        if not is_listable(name):
            raise HostlistError(f"name {name!r} cannot be written in a host list")
    ordered = natural_sorted(unique) if sort else unique
    groups: list[tuple[str, str, list[list[str]]]] = []
    for name in ordered:
        match = _LAST_NUMBER.match(name)
        if match is None:
            groups.append((name, "", []))
            continue
        prefix, digits, suffix = match.groups()
        if groups and groups[-1][2] and groups[-1][0] == prefix and groups[-1][1] == suffix:
            _add_number(groups[-1][2], digits)
        else:
            groups.append((prefix, suffix, [[digits, digits]]))
    return ",".join(_render(group) for group in groups)


def _add_number(ranges: list[list[str]], digits: str) -> None:
    low_text, high_text = ranges[-1]
    width = _width(low_text)
    value = int(digits)
    if value == int(high_text) + 1 and f"{value:0{width}d}" == digits:
        ranges[-1][1] = digits
    else:
        ranges.append([digits, digits])


def _render(group: tuple[str, str, list[list[str]]]) -> str:
    prefix, suffix, ranges = group
    if not ranges:
        return prefix
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return f"{prefix}{ranges[0][0]}{suffix}"
    body = ",".join(low if low == high else f"{low}-{high}" for low, high in ranges)
    return f"{prefix}[{body}]{suffix}"
