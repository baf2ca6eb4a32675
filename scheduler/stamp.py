"""Fact meta: the four fields every fact carries, assigned in decision order.

A :class:`Stamper` starts from the state's ``shard_seq`` and SLUID clock and counts on: the
facts of one ``decide`` or ``schedule`` call get ``shard_seq`` = state.shard_seq + 1, + 2, …
and SLUIDs minted at ``time_ms`` = max(now, state.now_ms), so time never goes backwards.
Evolving those facts advances the state's counters to the same values, which is why
re-deciding the same inputs from the same state gives byte-identical facts.
"""

from __future__ import annotations

from typing import TypedDict

from scheduler.state import ShardState
from schemas.sluid import format_sluid, mint

__all__ = ["Meta", "Stamper"]


class Meta(TypedDict):
    """The common fact fields, ready to splat into a fact constructor."""

    event_sluid: str
    shard: str
    shard_seq: int
    time_ms: int


class Stamper:
    """Hands out fact meta and new run SLUIDs for one decision."""

    __slots__ = ("clock", "seq", "shard", "time_ms")

    def __init__(self, state: ShardState, now_ms: int) -> None:
        self.shard = state.shard
        self.seq = state.shard_seq
        self.clock = state.clock
        self.time_ms = max(now_ms, state.now_ms)

    def meta(self) -> Meta:
        """The next fact's meta: a new event SLUID and the next shard sequence number."""
        self.seq += 1
        return {
            "event_sluid": self.new_sluid(),
            "shard": self.shard,
            "shard_seq": self.seq,
            "time_ms": self.time_ms,
        }

    def new_sluid(self) -> str:
        """Mint a SLUID (for an event, a run or an array task) at the decision time."""
        number, self.clock = mint(self.clock, self.time_ms)
        return format_sluid(number)
