"""Membership in a Slurm host list without expanding it: ``zz[000000-999999]`` costs its text.

A job's ``-x/--exclude`` may name hosts the cluster does not have, and a short text can name a
million of them: expanded, one such request held ~100 MB of the shard's memory in the node
filters' cache (red team, 2026-12-07). :class:`HostSet` expands a list of at most
:data:`EXPAND_LIMIT` names into a frozenset (a set lookup per node, as before) and otherwise
keeps each item as a pattern: its literal parts and, for each bracket group, the ranges, tested
against a name by one regular expression and the numbers it captured, formatted back exactly as
:func:`scheduler.topology.hostlist.expand` writes them (so a name is in the set exactly when the
expansion would list it). An item whose groups could split a name more than one way (a group
followed by a digit or by another group) is expanded, up to :data:`MAX_ITEM_NAMES` names.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from scheduler.topology.hostlist import HostlistError, expand, items_of, parse_range

__all__ = ["EXPAND_LIMIT", "MAX_ITEM_NAMES", "HostSet"]

EXPAND_LIMIT = 4096
MAX_ITEM_NAMES = 65_536

_Group = tuple[tuple[int, int, int], ...]  # (low, high, width) ranges of one bracket group
_Pattern = tuple[re.Pattern[str], tuple[_Group, ...]]


@dataclass(frozen=True, slots=True)
class HostSet:
    """The names a host list ``text`` names (equal and hashed by its text)."""

    text: str
    _names: frozenset[str] = field(compare=False, repr=False)
    _patterns: tuple[_Pattern, ...] = field(compare=False, repr=False)
    count: int = field(compare=False)
    """How many names the list writes (repeats counted)."""

    @classmethod
    def parse(cls, text: str) -> HostSet:
        """Raises :class:`HostlistError` (a ValueError) for a list that does not parse."""
        items = items_of(text)
        count = sum(_item_count(item, text) for item in items)
        if count <= EXPAND_LIMIT:
            return cls(text, frozenset(expand(text)), (), count)
        names: set[str] = set()
        patterns: list[_Pattern] = []
        for item in items:
            pattern = _pattern(item, text)
            if pattern is None:
                if _item_count(item, text) > MAX_ITEM_NAMES:
                    raise HostlistError(f"{item!r} in host list {text!r} names more than "
                                        f"{MAX_ITEM_NAMES} hosts in a way that cannot be matched "
                                        "unexpanded (a range right after another, or a digit)")
                names.update(expand(item))
            else:
                patterns.append(pattern)
        return cls(text, frozenset(names), tuple(patterns), count)

    def __bool__(self) -> bool:
        return self.count > 0

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name in self._names:
            return True
        return any(_matches(pattern, name) for pattern in self._patterns)


def _groups(item: str, text: str) -> tuple[list[str], list[_Group]]:
    """The literal parts (one more than the groups) and each group's ranges."""
    literals, groups, rest = [], [], item
    while "[" in rest:
        open_at = rest.index("[")
        close_at = rest.find("]", open_at)
        if close_at < 0 or "[" in rest[open_at + 1:close_at]:
            raise HostlistError(f"bad brackets in host list {text!r}")
        literals.append(rest[:open_at])
        ranges = [parse_range(part, text) for part in rest[open_at + 1:close_at].split(",")]
        groups.append(tuple(ranges))
        rest = rest[close_at + 1:]
    if "]" in rest:
        raise HostlistError(f"unbalanced ']' in host list {text!r}")
    literals.append(rest)
    return literals, groups


def _item_count(item: str, text: str) -> int:
    _literals, groups = _groups(item, text)
    return math.prod(sum(high - low + 1 for low, high, _w in group) for group in groups)


def _pattern(item: str, text: str) -> _Pattern | None:
    """The item as a pattern, or None when a name could be split between its groups in more
    than one way (then it is expanded)."""
    literals, groups = _groups(item, text)
    if any(not literal or literal[0].isdigit() for literal in literals[1:-1]) or (
            groups and literals[-1][:1].isdigit()):
        return None
    regex = "".join(re.escape(literal) + r"(\d+)" for literal in literals[:-1])
    return re.compile(regex + re.escape(literals[-1])), tuple(groups)


def _matches(pattern: _Pattern, name: str) -> bool:
    regex, groups = pattern
    found = regex.fullmatch(name)
    if found is None:
        return False
    for digits, group in zip(found.groups(), groups, strict=True):
        number = int(digits)
        if not any(low <= number <= high and digits == f"{number:0{width}d}"
                   for low, high, width in group):
            return False
    return True
