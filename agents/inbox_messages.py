"""A batch of confluent-kafka messages of the shard inbox → inbox records by partition (pure).

The shard loop (``agents.shard_loop``) reads the inbox with ``Consumer.consume``; what it gets
is a list of messages, some of which may be errors. This module sorts them:

- a readable message becomes an :class:`~agents.shard_runner.InboxRecord` of its partition;
- a message librdkafka could not read (a corrupt or undecompressable batch: ``_BAD_MSG``,
  ``_BAD_COMPRESSION``, a CRC mismatch, …), or whose fields cannot be converted (a header key
  that is not UTF-8 makes ``Message.headers()`` raise), becomes a **dead letter** and a marker
  record standing for its offset (``InboxRecord.last``): it decides nothing and is not a gap,
  and the shard goes on past it (the loop seeks past an unreadable offset, so the same error
  cannot come back for ever);
- end-of-partition events and errors that are not about one offset (a broker away, a
  rebalance in progress) are only counted in :attr:`InboxBatch.errors` for the caller to log:
  librdkafka retries them by itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.forwarding import Outgoing, dead_letter
from agents.shard_runner import InboxRecord
from streams.kafka_native import KafkaError

__all__ = ["UNREADABLE_CODES", "InboxBatch", "sort_messages"]

UNREADABLE_CODES = frozenset({
    KafkaError._BAD_MSG, KafkaError._BAD_COMPRESSION, KafkaError._UNDERFLOW,
    KafkaError._KEY_DESERIALIZATION, KafkaError._VALUE_DESERIALIZATION,
    KafkaError._UNSUPPORTED_FEATURE, KafkaError._MSG_TIMED_OUT,
    KafkaError.INVALID_MSG, KafkaError.MSG_SIZE_TOO_LARGE,
})
"""librdkafka errors that name one record the client cannot read (a dead letter, skipped)."""


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
        error = message.error()
        if error is not None:
            _sort_error(batch, message, error, topic, dead_letters)
            continue
        partition, offset = message.partition(), message.offset()
        try:
            record = InboxRecord(offset, message.timestamp()[1], message.value() or b"",
                                 tuple((str(k), bytes(v or b"")) for k, v in
                                       message.headers() or ()))
        except Exception as exc:  # a field the binding cannot convert (a non-UTF-8 header key)
            _unreadable(batch, topic, dead_letters, partition, offset,
                        f"{type(exc).__name__}: {exc}", exc.__cause__ or exc.__context__)
            continue
        batch.records.setdefault(partition, []).append(record)
    for records in batch.records.values():
        records.sort(key=lambda r: r.offset)
    return batch


def _sort_error(batch: InboxBatch, message: Any, error: Any, topic: str,
                dead_letters: str) -> None:
    code = error.code()
    if code == KafkaError._PARTITION_EOF:
        return
    partition, offset = message.partition(), message.offset()
    if code in UNREADABLE_CODES and partition is not None and offset is not None and offset >= 0:
        _unreadable(batch, topic, dead_letters, partition, offset, str(error), None)
        return
    batch.errors.append(f"{topic}[{partition}] offset {offset}: {error}")


def _unreadable(batch: InboxBatch, topic: str, dead_letters: str, partition: int,
                offset: int, error: str, cause: BaseException | None) -> None:
    reason = f"UnreadableRecord: {topic}[{partition}] offset {offset}: {error}"
    if cause is not None:
        reason += f" ({type(cause).__name__}: {cause})"
    batch.letters.append(dead_letter(dead_letters, source_topic=topic, partition=partition,
                                     offset=offset, key=None, value=b"", error=reason))
    batch.records.setdefault(partition, []).append(InboxRecord(offset, 0, b"", last=offset))
    batch.skip[partition] = max(batch.skip.get(partition, 0), offset + 1)
