"""A batch of confluent-kafka messages of ``sluice.requests`` → the intake's records (pure).

The intake loop (``agents.intake_loop``) reads the requests with ``Consumer.consume``; what it
gets is a list of messages, some of which may be errors. This module sorts them, as
``agents.inbox_messages`` does for the shard inbox:

- a readable message becomes a :class:`~agents.gap_reader.GapRecord` (the attributes of a
  message the intake reads: topic, partition, offset, timestamp, key, value, headers);
- a message librdkafka could not read (a corrupt or undecompressable batch: ``_BAD_MSG``,
  ``_BAD_COMPRESSION``, a CRC mismatch, …), or whose fields cannot be converted (a header key
  that is not UTF-8 makes ``Message.headers()`` raise), becomes a **marker**: a record whose
  value is an :class:`~agents.fetch_guard.UnreadableBatch` for its offset. The intake
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
from agents.inbox_messages import UNREADABLE_CODES
from streams.kafka_native import KafkaError

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
        error = message.error()
        partition, offset = message.partition(), message.offset()
        if error is not None:
            code = error.code()
            if code == KafkaError._PARTITION_EOF:
                continue
            if (code in UNREADABLE_CODES and partition in owned and offset is not None
                    and offset >= 0):
                _marker(batch, topic, partition, offset, str(error))
            else:
                batch.errors.append(f"{topic}[{partition}] offset {offset}: {error}")
            continue
        if partition not in owned:
            continue
        try:
            record = GapRecord(topic, partition, offset, message.timestamp()[1], message.key(),
                               message.value(), tuple((str(k), bytes(v or b"")) for k, v in
                                                      message.headers() or ()))
        except Exception as exc:  # a field the binding cannot convert (a non-UTF-8 header key)
            cause = exc.__cause__ or exc.__context__
            why = f"{type(exc).__name__}: {exc}"
            if cause is not None:
                why += f" ({type(cause).__name__}: {cause})"
            _marker(batch, topic, partition, offset, why)
            continue
        batch.records.append(record)
        batch.next_offsets[partition] = offset + 1
    return batch


def _marker(batch: IntakeMessages, topic: str, partition: int, offset: int, error: str) -> None:
    batch.records.append(GapRecord(topic, partition, offset, 0, None,
                                   UnreadableBatch(offset, offset, error)))
    batch.skip[partition] = max(batch.skip.get(partition, 0), offset + 1)
    batch.next_offsets[partition] = offset + 1
