"""A local store folded from another ledger than the broker's: told by positions past the end.

The worker's shard stores and the views' store are caches of the ledger: each keeps, with what
it folded, where it stands in its topics (the next offset of each ledger partition, the shard
inbox offset it applied). Kept while the broker's topics were reset (a fresh broker, topics
deleted and made again, another cluster's broker at the same address), such a store is ahead of
the ledger it is now given: the views showed a fresh cluster's nodes and jobs RUNNING for hours
(Slurm user round, 2026-12-08), and a shard whose inbox offset was past the new inbox's end
would have skipped every request up to it. A position can never be past its partition's end
(the high watermark counts every record written, aborted transactions' too, and a store only
records offsets it read or wrote), so one that is means the store is not this ledger's: it is
set aside (``streams.rocks.set_aside``) and rebuilt from the ledger the broker has.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streams.clients import consumer

__all__ = ["past_the_end"]

log = logging.getLogger(__name__)

_GONE = (KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART)


def past_the_end(bootstrap: str, positions: Mapping[str, Mapping[int, int]],
                 timeout_s: float = 10.0) -> list[str]:
    """Each position (topic → partition → next offset) past the end of its partition on the
    broker (or of a partition the broker does not have), as ``topic[p]: at N, ends at M``;
    empty when there is none, or when the broker does not answer (nothing is concluded)."""
    wanted = [(topic, p, at) for topic, parts in positions.items() for p, at in parts.items()
              if at > 0]
    if not wanted:
        return []
    reader = consumer(bootstrap)
    found: list[str] = []
    try:
        for topic, partition, at in wanted:
            try:
                _low, high = reader.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=timeout_s, cached=False)
            except KafkaException as exc:
                if exc.args and exc.args[0].code() in _GONE:
                    found.append(f"{topic}[{partition}]: at {at}, not on the broker")
                    continue
                log.info("store check: %s[%d]: %s; not concluded", topic, partition, exc)
                return []
            if at > high:
                found.append(f"{topic}[{partition}]: at {at}, ends at {high}")
    finally:
        reader.close()
    return found
