"""Heartbeats whose node clock runs ahead: when the health agent warns, and when it reports.

A node daemon refuses a command whose signed expiry (the worker's clock at signing plus
``CommandTTL``) is past on its own clock. A node whose clock runs ahead of the workers' by more
than ``CommandTTL`` therefore refuses every command it reads: a black hole for its launches
(docs/node-daemon.md, "A clock that runs ahead"). Its heartbeats prove it: each carries its
send time by the node's clock (``time_ms``), which the agent compares with the heartbeat's
arrival (its own clock when it reads the record, as rule 0 of ``agents.health_watch``). Network
and reader delays only make a heartbeat look *later*, never earlier, so "ahead by more than the
TTL" understates the node's clock, never overstates it.

:class:`ClockAheadWatch` (times in ms, passed in: the shell's clock) keeps, per node, how many
heartbeats in a row ran ahead:

- by more than ``CommandTTL``, ``beats`` heartbeats in a row (``SLUICE_CLOCK_AHEAD_BEATS``, 3 by
  default, so one odd record cannot drain a node; 0: never): **report**, once per episode (the
  agent sends ``NodeClockAhead`` to the node's shard, which drains it:
  ``scheduler.nodes.clock_ahead``);
- by more than half of it, as many in a row: **warn**, once per episode (commands live less than
  half their TTL on that node; it is not drained).

An episode ends with a heartbeat that is not ahead by that much (a fixed clock, a restarted
daemon); a later one is a new episode. A clock *behind* is nothing here (``HealthAgent._alive_ms``
tolerates it). The agent forgets every streak when its heartbeat partitions change hands: a
new owner reports anew, and the core ignores the repeat (the node is DRAIN already).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from enum import Enum

__all__ = ["DEFAULT_BEATS", "Ahead", "ClockAheadWatch", "clock_ahead_beats"]

log = logging.getLogger(__name__)

DEFAULT_BEATS = 3
"""``SLUICE_CLOCK_AHEAD_BEATS``' default."""


def clock_ahead_beats() -> int:
    """``SLUICE_CLOCK_AHEAD_BEATS``: how many heartbeats in a row ahead by more than
    ``CommandTTL`` drain a node (0: never; default 3)."""
    text = os.environ.get("SLUICE_CLOCK_AHEAD_BEATS", "")
    try:
        value = int(text) if text else DEFAULT_BEATS
    except ValueError:
        value = -1
    if value < 0:
        log.error("SLUICE_CLOCK_AHEAD_BEATS=%r is not a whole number >= 0; using %d", text,
                  DEFAULT_BEATS)
        return DEFAULT_BEATS
    return value


class Ahead(Enum):
    """What one heartbeat asks of the agent."""

    NOTHING = "nothing"
    WARN = "warn"
    """Ahead by more than half the TTL, ``beats`` in a row: log it (once per episode)."""
    REPORT = "report"
    """Ahead by more than the TTL, ``beats`` in a row: send ``NodeClockAhead`` (once)."""


@dataclass(slots=True)
class _Streak:
    half: int = 0
    """Heartbeats in a row ahead by more than half the TTL."""
    full: int = 0
    """Of those, the last ones in a row ahead by more than the TTL."""
    least_ms: int = 0
    """The least lead of the ``full`` heartbeats (what the report claims)."""
    warned: bool = False
    reported: bool = False


@dataclass(slots=True)
class ClockAheadWatch:
    """The clock-ahead rules of one health agent (see the module)."""

    ttl_ms: int
    beats: int = DEFAULT_BEATS
    _nodes: dict[str, _Streak] = field(default_factory=dict)

    def heard(self, node: str, sent_ms: int, now_ms: int) -> Ahead:
        """A heartbeat of ``node`` sent at ``sent_ms`` (its clock) read at ``now_ms``."""
        ahead_ms = sent_ms - now_ms
        if self.ttl_ms <= 0 or 2 * ahead_ms <= self.ttl_ms:
            self._nodes.pop(node, None)  # the usual case: nothing kept; an episode ends
            return Ahead.NOTHING
        streak = self._nodes.setdefault(node, _Streak())
        streak.half += 1
        if ahead_ms > self.ttl_ms:
            streak.least_ms = ahead_ms if streak.full == 0 else min(streak.least_ms, ahead_ms)
            streak.full += 1
        else:
            streak.full = 0
            streak.reported = False  # the full episode ends; the half one goes on
        needed = self.beats or DEFAULT_BEATS
        if self.beats and streak.full >= needed and not streak.reported:
            streak.reported = streak.warned = True
            return Ahead.REPORT
        if streak.half >= needed and not streak.warned:
            streak.warned = True
            return Ahead.WARN
        return Ahead.NOTHING

    def least_ahead_ms(self, node: str) -> int:
        """The least lead of the heartbeats in a row that made ``node``'s report (0: none)."""
        streak = self._nodes.get(node)
        return streak.least_ms if streak is not None else 0

    def forget(self) -> None:
        """The agent's heartbeat partitions changed: every streak starts again."""
        self._nodes.clear()
