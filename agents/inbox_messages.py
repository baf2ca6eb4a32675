"""A batch of confluent-kafka messages of the shard inbox → inbox records by partition (pure).

The shard loop (``agents.shard_loop``) reads the inbox with ``Consumer.consume``; what it gets
is a list of messages, some of which may be errors. This module sorts them:

- a readable message becomes an :class:`~agents.shard_runner.InboxRecord` of its partition;
- a message the client cannot read (``agents.kafka_messages``) becomes a **dead letter** and
  a marker record standing for its offset (``InboxRecord.last``): it decides nothing and is not
  a gap, and the shard goes on past it (the loop seeks past an unreadable offset, so the same
  error cannot come back for ever);
- end-of-partition events and errors that are not about one offset (a broker away, a
  rebalance in progress) are only counted in :attr:`InboxBatch.errors` for the caller to log:
  librdkafka retries them by itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.forwarding import Outgoing, dead_letter
from agents.kafka_messages import Fields, Unreadable, read_message
from agents.shard_runner import InboxRecord

__all__ = ["InboxBatch", "sort_messages"]


@dataclass
class InboxBatch:
    """One ``consume`` call's messages, sorted."""

    records: dict[int, list[InboxRecord]] = field(default_factory=dict)
    """Each partition's records (readable ones and markers), in offset order."""
    letters: list[Outgoing] = field(default_factory=list)
    """The dead letters to deliver before the records are decided."""
    skip: dict[int, int] = field(default_factory=dict)
    """Partition → the offset to seek to: past the last unreadable record of the batch."""
    errors: list[str] = field(default_factory=list)
    """Errors that are not about one record (logged; librdkafka retries them)."""


def sort_messages(messages: Sequence[Any], topic: str, dead_letters: str) -> InboxBatch:
    """The records, dead letters and skips of ``messages`` read from ``topic``."""
    batch = InboxBatch()
    for message in messages:
        read = read_message(message, topic)
        if isinstance(read, Fields):
            batch.records.setdefault(read.partition, []).append(
                InboxRecord(read.offset, read.timestamp_ms, read.value or b"", read.headers))
        elif isinstance(read, Unreadable):
            _unreadable(batch, topic, dead_letters, read)
        elif read is not None:
            batch.errors.append(read)
    for records in batch.records.values():
        records.sort(key=lambda r: r.offset)
    return batch


def _unreadable(batch: InboxBatch, topic: str, dead_letters: str, read: Unreadable) -> None:
    partition, offset = read.partition, read.offset
    reason = f"UnreadableRecord: {topic}[{partition}] offset {offset}: {read.why}"
    batch.letters.append(dead_letter(dead_letters, source_topic=topic, partition=partition,
                                     offset=offset, key=None, value=b"", error=reason))
    batch.records.setdefault(partition, []).append(InboxRecord(offset, 0, b"", last=offset))
    batch.skip[partition] = max(batch.skip.get(partition, 0), offset + 1)
