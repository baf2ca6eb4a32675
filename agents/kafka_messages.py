"""One confluent-kafka message as the worker's loops read it (pure): a readable record's
fields, a record the client cannot read, an error that is about no record, or nothing (the end
of a partition). ``agents.inbox_messages`` (the shard inbox) and ``agents.intake_messages``
(the requests) sort their batches with it.

A record is unreadable when librdkafka says so for its offset (a corrupt or undecompressable
batch: ``_BAD_MSG``, ``_BAD_COMPRESSION``, a CRC mismatch, …) or when its fields cannot be
converted (a header key that is not UTF-8 makes ``Message.headers()`` raise). Errors that are
not about one offset (a broker away, a rebalance in progress) are retried by librdkafka itself:
the loops only log them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streams.kafka_native import KafkaError

__all__ = ["UNREADABLE_CODES", "Fields", "Unreadable", "read_message"]

UNREADABLE_CODES = frozenset({
    KafkaError._BAD_MSG, KafkaError._BAD_COMPRESSION, KafkaError._UNDERFLOW,
    KafkaError._KEY_DESERIALIZATION, KafkaError._VALUE_DESERIALIZATION,
    KafkaError._UNSUPPORTED_FEATURE, KafkaError._MSG_TIMED_OUT,
    KafkaError.INVALID_MSG, KafkaError.MSG_SIZE_TOO_LARGE,
})
"""librdkafka errors that name one record the client cannot read (a dead letter, skipped)."""

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class Fields:
    """A readable record."""

    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: Headers


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A record the client cannot read, and why."""

    partition: int
    offset: int
    why: str


def read_message(message: Any, topic: str) -> Fields | Unreadable | str | None:
    """What ``message`` (read from ``topic``) is: its fields, an unreadable record, the text of
    an error about no record (``topic[partition] offset N: error``), or None for the end of a
    partition."""
    error = message.error()
    partition, offset = message.partition(), message.offset()
    if error is not None:
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            return None
        if code in UNREADABLE_CODES and partition is not None and offset is not None \
                and offset >= 0:
            return Unreadable(partition, offset, str(error))
        return f"{topic}[{partition}] offset {offset}: {error}"
    try:
        headers = tuple((str(k), bytes(v or b"")) for k, v in message.headers() or ())
        return Fields(partition, offset, message.timestamp()[1], message.key(), message.value(),
                      headers)
    except Exception as exc:  # a field the binding cannot convert (a non-UTF-8 header key)
        why = f"{type(exc).__name__}: {exc}"
        cause = exc.__cause__ or exc.__context__
        if cause is not None:
            why += f" ({type(cause).__name__}: {cause})"
        return Unreadable(partition, offset, why)
