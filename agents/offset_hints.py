"""Where a batch reader of the worker goes on after a batch: the offsets it handled stored as
hints for the group's next commit, and seeks past records it could not read.

The intake (``sluice.requests``), the shard loop (``shard-inbox``) and the health loop
(``sluice.heartbeats``) each read with a confluent-kafka consumer in batches
(:mod:`agents.loop_thread`) and act only on the partitions they own; these are their common
steps, each naming its loop in what it logs.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Mapping

from streams.kafka_native import Consumer, KafkaException, TopicPartition

__all__ = ["seek_past", "store_hints"]

log = logging.getLogger(__name__)


def store_hints(reader: Consumer, topic: str, next_offsets: Mapping[int, int],
                owned: Container[int], who: str) -> None:
    """Store each owned partition's next offset for the next commit (a partition revoked
    meanwhile is refused by the consumer: nothing to say)."""
    hints = [TopicPartition(topic, p, o) for p, o in sorted(next_offsets.items()) if p in owned]
    if not hints:
        return
    try:
        reader.store_offsets(offsets=hints)
    except KafkaException as exc:
        log.debug("%s: offset hints not stored: %s", who, exc)


def seek_past(reader: Consumer, topic: str, skip: Mapping[int, int], owned: Container[int],
              skipped: dict[int, int], who: str) -> None:
    """Move past unreadable records (``skip``: partition → the offset after one), so the same
    error is not fetched for ever; a record reported unreadable again is skipped one offset
    further each time (``skipped`` remembers the last target of each partition)."""
    for partition, offset in skip.items():
        if partition not in owned:
            continue
        target = max(offset, skipped.get(partition, -1) + 1)
        skipped[partition] = target
        try:
            reader.seek(TopicPartition(topic, partition, target))
        except KafkaException as exc:
            log.warning("%s: seeking past unreadable offset %d of partition %d failed: %s", who,
                        target - 1, partition, exc)
