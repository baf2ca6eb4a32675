"""``projections.replay.read_batches`` against a consumer played from a script: every fact of
every partition once, in read order, skipping what does not decode and what is not a fact; with
``largest``, batches of at most that many facts (``sluice replay``'s reader hands each on as soon
as it is decoded, so the fold starts before a whole fetch is decoded)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from projections.replay import read_batches
from schemas import encode
from streams.kafka_native import KafkaError, TopicPartition
from tests.unit.fake_kafka import FakeMessage

TOPIC = "t.events"


class _Reader:
    """The calls ``read_batches`` makes of a consumer: the topic's partitions, their ends, and
    fetches of up to ``num_messages`` messages from a script (then end-of-partition events)."""

    def __init__(self, messages: list[FakeMessage], partitions: int) -> None:
        self.script, self.partitions = list(messages), partitions
        self.ends = {p: 1 + max((m.offset() for m in messages if m.partition() == p), default=-1)
                     for p in range(partitions)}
        self.assigned: list[int] = []

    def list_topics(self, topic: str, timeout: float) -> Any:
        parts = dict.fromkeys(range(self.partitions))
        return SimpleNamespace(topics={topic: SimpleNamespace(partitions=parts)})

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float) -> tuple[int, int]:
        return 0, self.ends[tp.partition]

    def assign(self, tps: list[TopicPartition]) -> None:
        self.assigned = [tp.partition for tp in tps]

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        if not self.script:
            return [FakeMessage(p, self.ends[p], error=KafkaError(KafkaError._PARTITION_EOF))
                    for p in self.assigned]
        taken, self.script = self.script[:num_messages], self.script[num_messages:]
        return taken


def _pending(seq: int) -> bytes:
    return encode("JobPending", {"event_sluid": "s00XKDVDNA0E04", "shard": "a",
                                 "shard_seq": seq, "time_ms": 1_767_225_600_000 + seq,
                                 "job_sluid": "s00XKDVDNA0E02", "reason": "Resources",
                                 "priority": seq})


def _script() -> list[FakeMessage]:
    """25 facts over three partitions, a value that does not decode and one that is no fact."""
    messages = [FakeMessage(seq % 3, seq // 3, _pending(seq)) for seq in range(1, 26)]
    messages.insert(7, FakeMessage(0, 9, b"\xc3\x01 not a value"))
    messages.insert(12, FakeMessage(1, 9, encode("CancelJob", {"job_sluid": "s00XKDVDNA0E02"})))
    return messages


@pytest.mark.parametrize("largest", [0, 1, 4, 7, 100])
def test_read_batches_gives_every_fact_once_in_batches_of_at_most_largest(largest: int) -> None:
    batches = list(read_batches(_Reader(_script(), 3), TOPIC, largest))
    facts = [fact for batch in batches for fact in batch]
    assert [record["shard_seq"] for _name, record, _p, _o in facts] == list(range(1, 26))
    assert [(p, o) for _n, _r, p, o in facts] == [(seq % 3, seq // 3) for seq in range(1, 26)]
    assert all(batch for batch in batches)
    if largest:
        assert max(map(len, batches)) <= largest
        assert len(batches) >= -(-25 // largest)
    else:  # one batch per fetch of 10,000 messages
        assert len(batches) == 1
