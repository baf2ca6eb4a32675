"""Fact meta: the four fields every fact carries, assigned in decision order.

A :class:`Stamper` starts from the state's ``shard_seq`` and SLUID clock and counts on: the
facts of one ``decide`` or ``schedule`` call get ``shard_seq`` = state.shard_seq + 1, + 2, …
and SLUIDs minted at ``time_ms`` = max(now, state.now_ms), so time never goes backwards.
Evolving those facts advances the state's counters to the same values, which is why
re-deciding the same inputs from the same state gives byte-identical facts.

Minting is ``schemas.sluid.mint`` step for step (same millisecond → next sequence, past 0x3FF
borrow the next millisecond, a clock that steps back keeps the last millisecond), inlined on
plain integers because a scheduling pass mints one SLUID per fact; a property test checks that
both give the same ids.
"""

from __future__ import annotations

from typing import TypedDict

from scheduler.shard.sluids import format_fast, parse_fast, time_seq
from scheduler.shard.state import ShardState
from schemas.sluid import SEQUENCE_MAX

__all__ = ["Meta", "Stamper"]


class Meta(TypedDict):
    """The common fact fields, ready to splat into a fact constructor."""

    event_sluid: str
    shard: str
    shard_seq: int
    time_ms: int


class Stamper:
    """Hands out fact meta and new SLUIDs for one decision."""

    __slots__ = ("cluster", "last_ms", "seq", "sequence", "shard", "time_ms")

    def __init__(self, state: ShardState, now_ms: int) -> None:
        meta = state.meta
        self.shard = meta.shard
        self.seq = meta.shard_seq
        self.cluster = meta.cluster_id << 52
        self.last_ms, self.sequence = _last_minted(meta.last_sluid)
        self.time_ms = max(now_ms, meta.now_ms)

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
        if self.time_ms > self.last_ms:
            self.last_ms, self.sequence = self.time_ms, 0
        elif self.sequence < SEQUENCE_MAX:
            self.sequence += 1
        else:
            self.last_ms, self.sequence = self.last_ms + 1, 0
        text = format_fast(self.cluster | (self.last_ms << 10) | self.sequence)
        _LAST[0] = (text, (self.last_ms, self.sequence))  # the next decision starts here
        return text

    # ``new_sluid`` is on the hot path; ``format_fast`` caches the per-millisecond prefix.


_LAST: list[tuple[str, tuple[int, int]]] = [("", (0, -1))]


def _last_minted(last_sluid: str) -> tuple[int, int]:
    """(milliseconds, sequence) of the shard's last SLUID: where its clock stands (a one-entry
    memo of a pure function, primed with each SLUID minted: the next decision usually starts
    from the last one)."""
    cached, value = _LAST[0]
    if last_sluid != cached:
        value = time_seq(parse_fast(last_sluid)) if last_sluid else (0, -1)
        _LAST[0] = (last_sluid, value)
    return value
