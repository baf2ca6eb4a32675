"""A batch of confluent-kafka messages of ``sluice.requests`` → the intake's records (pure).

The intake loop (``agents.intake_loop``) reads the requests with ``Consumer.consume``; what it
gets is a list of messages, some of which may be errors. This module sorts them, as
``agents.inbox_messages`` does for the shard inbox:

- a readable message becomes a :class:`~agents.gap_reader.GapRecord` (the attributes of a
  message the intake reads: topic, partition, offset, timestamp, key, value, headers);
- a message the client cannot read (``agents.kafka_messages``) becomes a **marker**: a record
  whose value is an :class:`~agents.fetch_guard.UnreadableBatch` for its offset. The intake
  dead-letters a marker by position (``agents.fetch_guard.dead_letter_for``) and counts its
  offset as handled, and the loop seeks past it (:attr:`IntakeMessages.skip`), so the same
  error cannot come back for ever;
- a message of a partition this worker does not own any more (its revocation ran inside the
  ``consume`` that returned it) is left out: its next owner reads it from the progress;
- end-of-partition events and errors that are not about one offset (a broker away, a
  rebalance in progress) are only listed in :attr:`IntakeMessages.errors` for the caller to
  log: librdkafka retries them by itself.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from agents.fetch_guard import UnreadableBatch
from agents.gap_reader import GapRecord
from agents.kafka_messages import Fields, Unreadable, read_message

__all__ = ["IntakeMessages", "sort_requests"]


@dataclass
class IntakeMessages:
    """One ``consume`` call's messages, sorted."""

    records: list[GapRecord] = field(default_factory=list)
    """Readable records and markers of owned partitions, in the order they came."""
    skip: dict[int, int] = field(default_factory=dict)
    """Partition → the offset to seek to: past the last unreadable record of the batch."""
    next_offsets: dict[int, int] = field(default_factory=dict)
    """Partition → the offset after the batch's last record there."""
    errors: list[str] = field(default_factory=list)
    """Errors that are not about one record (logged; librdkafka retries them)."""


def sort_requests(messages: Sequence[Any], topic: str, owned: Set[int]) -> IntakeMessages:
    """The records, markers and skips of ``messages`` read from ``topic``."""
    batch = IntakeMessages()
    for message in messages:
        read = read_message(message, topic)
        if isinstance(read, Fields) and read.partition in owned:
            batch.records.append(GapRecord(topic, read.partition, read.offset,
                                           read.timestamp_ms, read.key, read.value,
                                           read.headers))
            batch.next_offsets[read.partition] = read.offset + 1
        elif isinstance(read, Unreadable) and read.partition in owned:
            _marker(batch, topic, read)
        elif isinstance(read, str):
            batch.errors.append(read)
    return batch


def _marker(batch: IntakeMessages, topic: str, read: Unreadable) -> None:
    partition, offset = read.partition, read.offset
    batch.records.append(GapRecord(topic, partition, offset, 0, None,
                                   UnreadableBatch(offset, offset, read.why)))
    batch.skip[partition] = max(batch.skip.get(partition, 0), offset + 1)
    batch.next_offsets[partition] = offset + 1
