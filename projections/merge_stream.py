"""The ledger's decision order while it is still being read (``projections.replay.merge``,
one fact at a time).

:class:`MergeStream` takes the facts as the partitions give them (each shard's facts spread over
the partitions, in no order between partitions) and hands on each fact as soon as its place in
the merged order is known: a shard's facts by ``shard_seq``, the shards interleaved by
``(time_ms, shard, shard_seq)``, as :func:`heapq.merge` over the shards interleaves them. A
fact is handed on when every shard seen so far has its next fact at hand (the smallest of those
heads goes first), so the order is ``merge``'s whenever every shard was seen before the first
fact was handed on; :func:`projections.replay_stream.replay_views` checks that at the end against
``merge`` of every fact read and folds again the plain way when it is not so (a shard first
seen late). A shard whose facts have all been handed on holds the others back until the read
ends: the stream is then merged in one go at the end.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Any

from projections.replay import Fact

__all__ = ["MergeStream"]

Key = tuple[int, str, int]


class MergeStream:
    """Facts in, facts in decision order out; every fact added is kept in :attr:`facts`."""

    def __init__(self) -> None:
        self.facts: list[Fact] = []
        """Every fact added, in read order (what ``projections.replay.read_facts`` returns)."""
        self.handed = 0
        """How many facts were handed on."""
        self.late = False
        """Whether a shard was first seen after facts were handed on: the order handed on may
        then not be ``merge``'s."""
        self._waiting: dict[str, dict[int, Fact]] = {}
        """Per shard: its facts not yet handed on, by ``shard_seq``."""
        self._next: dict[str, int] = {}
        """Per shard: the ``shard_seq`` it hands on next."""
        self._heads: list[tuple[Key, Fact]] = []
        """The shards whose next fact is at hand, as a heap by that fact's order."""
        self._missing = 0
        """How many shards seen have not their next fact at hand (none handed on while any)."""

    def add(self, batch: Iterable[tuple[str, dict[str, Any], int, int]]) -> Iterator[Fact]:
        """Take ``(name, record, partition, offset)`` facts; the facts now in place (to be
        taken before the next call)."""
        facts, waiting, following = self.facts, self._waiting, self._next
        start = len(facts)
        facts.extend(map(Fact._make, batch))  # the facts made in C, one call per batch
        for fact in facts[start:]:
            record = fact[1]
            shard, seq = str(record["shard"]), int(record["shard_seq"])
            expected = following.get(shard)
            if expected is None:  # a shard first seen: its first fact is not yet at hand
                following[shard] = expected = 1
                waiting[shard] = {}
                self._missing += 1
                self.late = self.late or self.handed > 0
            held = waiting[shard]
            if seq < expected or seq in held:  # a duplicate: merge reports it at the end
                continue
            held[seq] = fact
            if seq == expected:
                heapq.heappush(self._heads, ((int(record["time_ms"]), shard, seq), fact))
                self._missing -= 1
        return self._ready()

    def finish(self) -> Iterator[Fact]:
        """Every fact is read: a shard whose facts were all handed on holds no other back; the
        facts now in place (all of them unless a shard's sequence has a gap)."""
        for shard, expected in self._next.items():
            if not self._waiting[shard] and expected > 1:
                self._missing -= 1
        return self._ready()

    def _ready(self) -> Iterator[Fact]:
        if self._missing or not self._heads:
            return
        if len(self._next) == 1:  # one shard: its facts by sequence, no heap
            (_time, shard, seq), _head = self._heads.pop()
            held, following = self._waiting[shard], self._next
            self._missing = 1  # once its next fact is not at hand
            fact = held.pop(seq, None)
            while fact is not None:
                seq += 1
                following[shard] = seq
                self.handed += 1
                yield fact
                fact = held.pop(seq, None)
            return
        heads, waiting, following = self._heads, self._waiting, self._next
        while heads and not self._missing:
            (_time, shard, seq), fact = heads[0]
            held = waiting[shard]
            del held[seq]
            following[shard] = seq + 1
            ahead = held.get(seq + 1)
            if ahead is None:
                heapq.heappop(heads)
                self._missing += 1
            else:
                record = ahead.record
                heapq.heapreplace(heads, ((int(record["time_ms"]), shard, seq + 1), ahead))
            self.handed += 1
            yield fact
