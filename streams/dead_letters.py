"""Dead letters: the ``DeadLetter`` record, truncated to fit, and a writer for plain consumers.

A dead letter keeps where the record was (topic, partition, offset), its key and value, and why
it could not be processed. :func:`dead_letter_value` encodes one; if it would not fit a Kafka
record (1 MiB), the key and value are cut to a prefix and ``error`` says how long they were, so
the position and the reason always survive. :class:`DeadLetterWriter` is for the consumers that
use confluent-kafka (projections, node daemons): a record they cannot read is written there and
skipped, never retried forever.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from schemas.writer import encode
from streams.clients import producer
from streams.kafka_native import KafkaException
from streams.settings import Settings
from streams.topics import Topics

__all__ = [
    "DEAD_LETTER_MAX_BYTES",
    "PRODUCER_MAX_REQUEST_BYTES",
    "TRUNCATED_KEY_BYTES",
    "DeadLetterWriter",
    "dead_letter_value",
]

log = logging.getLogger(__name__)

PRODUCER_MAX_REQUEST_BYTES = 1_048_576
"""The largest record Sluice's producers send (Kafka's default ``message.max.bytes``: 1 MiB)."""

DEAD_LETTER_MAX_BYTES = PRODUCER_MAX_REQUEST_BYTES - 8_192
"""A dead letter larger than this (record overhead included) is truncated."""

TRUNCATED_VALUE_BYTES = 65_536
TRUNCATED_KEY_BYTES = 1_024
ERROR_MAX_CHARS = 4_000


def dead_letter_value(
    *,
    source_topic: str,
    partition: int,
    offset: int,
    key: bytes | None,
    value: bytes,
    error: str,
    now_ms: int | None = None,
) -> bytes:
    """The encoded ``DeadLetter``; if it would not fit a Kafka record, a truncated one.

    The truncated letter keeps the position and the reason, a prefix of the key and value, and
    says in ``error`` how long they were. A value that cannot fit is never encoded whole: a
    record of a gzip batch can inflate to 1 GB (librdkafka inflates a batch without bound), and
    its whole letter, encoded only to be cut, cost another gigabyte or more (red team).
    """
    if len(error) > ERROR_MAX_CHARS:
        error = error[:ERROR_MAX_CHARS] + f"... ({len(error)} characters)"
    body = {
        "source_topic": source_topic, "partition": partition, "offset": offset, "key": key,
        "value": value, "error": error,
        "time_ms": int(time.time() * 1000) if now_ms is None else now_ms,
    }
    if len(value) + 2 * len(key or b"") + len(error) <= DEAD_LETTER_MAX_BYTES:
        encoded = encode("DeadLetter", body)  # encoded only when it may fit: a value of a
        if len(encoded) + len(key or b"") <= DEAD_LETTER_MAX_BYTES:  # gzip batch can be 1 GB
            return encoded
    notes = [f"value truncated from {len(value)} to {min(len(value), TRUNCATED_VALUE_BYTES)} bytes"]
    if key is not None and len(key) > TRUNCATED_KEY_BYTES:
        notes.append(f"key truncated from {len(key)} to {TRUNCATED_KEY_BYTES} bytes")
        body["key"] = key[:TRUNCATED_KEY_BYTES]
    body["value"] = value[:TRUNCATED_VALUE_BYTES]
    body["error"] = f"{error} [{'; '.join(notes)}]"
    return encode("DeadLetter", body)


class DeadLetterWriter:
    """Writes dead letters for a confluent-kafka consumer; each write waits for the broker.

    A letter the broker refuses is logged, never raised: the consumer skips the record either
    way. Raised, it stopped the views' process under ``sluice up --secure``, whose ``views``
    principal could not write the dead-letter topic, and at each restart again on the same
    ledger record (red team)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.topic = Topics(settings).dead_letters
        self._producer: Any = None

    def write(self, message: Any, reason: str) -> None:
        """Dead-letter a confluent-kafka ``Message`` (its key, value and position) with why."""
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        log.error("dead letter from %s[%s]@%s: %s", topic, partition, offset, reason)
        key = message.key()
        value = dead_letter_value(
            source_topic=topic or "", partition=partition if partition is not None else -1,
            offset=offset if offset is not None else -1, key=key, value=message.value() or b"",
            error=reason,
        )
        short_key = None if key is None else key[:TRUNCATED_KEY_BYTES]
        try:
            if self._producer is None:
                self._producer = producer(self.settings.bootstrap,
                                          **{"message.max.bytes": PRODUCER_MAX_REQUEST_BYTES})
            self._producer.produce(self.topic, value, short_key, on_delivery=_refused)
            if self._producer.flush(30):
                log.error("dead letter for %s[%s]@%s not confirmed in 30 s", topic, partition,
                          offset)
        except (KafkaException, BufferError) as exc:  # the record is skipped all the same
            log.error("dead letter for %s[%s]@%s could not be written (%s); the record is "
                      "skipped, its position and reason are the line above", topic, partition,
                      offset, exc)
            self._producer = None  # an idempotent producer that failed stays failed: a new one


def _refused(error: Any, message: Any) -> None:
    """A dead letter the broker did not take (no WRITE on the topic: its ACLs)."""
    if error is not None:
        log.error("dead letter for %s refused by the broker: %s", message.key(), error)
