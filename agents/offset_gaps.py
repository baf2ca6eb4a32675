"""Which records of a batch are new, and which offsets were skipped before them (pure).

An agent that keeps the next offset it expects on a partition compares each batch against it:
a record wholly below it was handled already (redelivered after a rebalance: drop it), a
record that starts past it means the offsets in between were never delivered (read them
directly first, :mod:`agents.gap_reader`). A record spans one offset, except the marker of an
unreadable batch (:class:`agents.fetch_guard.UnreadableBatch`), which stands for the whole
batch ``first..last``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Gap", "Plan", "Take", "plan_partition"]


@dataclass(frozen=True, slots=True)
class Gap:
    """Offsets ``[first, end)`` to read directly before the next record."""

    first: int
    end: int


@dataclass(frozen=True, slots=True)
class Take:
    """The record at ``index`` in the batch is new: handle it."""

    index: int


@dataclass(frozen=True, slots=True)
class Plan:
    """One partition's share of a batch: the steps in order and the offset expected after."""

    steps: tuple[Gap | Take, ...]
    next_offset: int
    dropped: int
    """How many records of the batch were below the expected offset (handled before)."""


def plan_partition(expected: int, spans: Sequence[tuple[int, int]]) -> Plan:
    """The plan for one partition's records, ``spans`` being each one's (first, last) offset.

    ``spans`` are in the order the records arrived (offset order within a partition).
    """
    steps: list[Gap | Take] = []
    dropped = 0
    for index, (first, last) in enumerate(spans):
        if last < expected:
            dropped += 1
            continue
        if first > expected:
            steps.append(Gap(expected, first))
        steps.append(Take(index))
        expected = last + 1
    return Plan(tuple(steps), expected, dropped)
