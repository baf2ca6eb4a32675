"""Reading the ledger (``sluice.events``) from given positions to its current end.

The ledger is keyed by subject SLUID, so one shard's facts are spread over every partition;
readers merge them back into shard order by ``(shard, shard_seq)``. Only committed transactions
are read (``read_committed``), so a batch of facts is seen whole or not at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from schemas import DecodeError, decode
from streams.clients import consumer

__all__ = ["LedgerRecord", "end_offsets", "read_ledger"]


@dataclass(frozen=True, slots=True)
class LedgerRecord:
    """One decoded ledger record and where it was read."""

    partition: int
    offset: int
    timestamp_ms: int
    name: str
    record: dict[str, Any]


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """The current end (last stable offset for read-committed readers) of every partition."""
    reader = consumer(bootstrap)
    try:
        return {p: high for p, (_low, high) in _watermarks(reader, topic).items()}
    finally:
        reader.close()


def _watermarks(reader: Any, topic: str) -> dict[int, tuple[int, int]]:
    partitions = reader.list_topics(topic, timeout=10).topics[topic].partitions
    return {
        p: reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        for p in sorted(partitions)
    }


def read_ledger(
    bootstrap: str,
    topic: str,
    start: Mapping[int, int] | None = None,
    on_undecodable: str = "skip",
) -> Iterator[LedgerRecord]:
    """Yield every record from ``start`` (partition → next offset; default: the beginning) up to
    the end each partition had when reading began. Partition by partition, not merged; a
    partition with nothing to read (empty, or read to its end already) costs no fetch."""
    reader = consumer(bootstrap)
    try:
        for partition, (low, end) in _watermarks(reader, topic).items():
            first = (start or {}).get(partition, OFFSET_BEGINNING)
            if end <= low or (first != OFFSET_BEGINNING and first >= end):
                continue
            yield from _read_partition(reader, topic, partition, first, end, on_undecodable)
    finally:
        reader.close()


def _read_partition(
    reader: Any, topic: str, partition: int, first: int, end: int, on_undecodable: str
) -> Iterator[LedgerRecord]:
    reader.assign([TopicPartition(topic, partition, first)])
    while True:
        messages = reader.consume(num_messages=5000, timeout=0.2)
        if not messages:
            position = reader.position([TopicPartition(topic, partition)])[0].offset
            if position >= end or end == 0:
                return
            continue
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return
                raise KafkaException(error)
            offset = message.offset()
            try:
                name, record = decode(message.value())
            except DecodeError:
                if on_undecodable == "raise":
                    raise
                continue
            yield LedgerRecord(partition, offset, message.timestamp()[1], name, record)
            if offset + 1 >= end:
                return
