"""The batch readers' common steps after a batch (agents.offset_hints): hints for the owned
partitions only, and a seek past an unreadable record that goes one further each time it is
reported again."""

from __future__ import annotations

from typing import Any

import pytest

from agents.offset_hints import seek_past, store_hints
from streams.kafka_native import KafkaException


class Reader:
    """Records what a batch reader was asked to store and seek (a consumer's two calls)."""

    def __init__(self, fail: bool = False) -> None:
        self.stored: list[tuple[str, int, int]] = []
        self.seeks: list[tuple[str, int, int]] = []
        self.fail = fail

    def store_offsets(self, offsets: list[Any]) -> None:
        if self.fail:
            raise KafkaException("revoked")
        self.stored += [(tp.topic, tp.partition, tp.offset) for tp in offsets]

    def seek(self, tp: Any) -> None:
        if self.fail:
            raise KafkaException("gone")
        self.seeks.append((tp.topic, tp.partition, tp.offset))


def test_hints_are_stored_for_owned_partitions_only_in_partition_order() -> None:
    reader = Reader()
    store_hints(reader, "t", {3: 30, 1: 10, 2: 20}, {1, 3}, "test")  # type: ignore[arg-type]
    assert reader.stored == [("t", 1, 10), ("t", 3, 30)]
    store_hints(reader, "t", {2: 21}, {1, 3}, "test")  # type: ignore[arg-type]
    assert reader.stored == [("t", 1, 10), ("t", 3, 30)]


def test_an_unreadable_record_reported_again_is_passed_one_offset_further() -> None:
    reader, skipped = Reader(), {}
    seek_past(reader, "t", {0: 5, 1: 9}, {0}, skipped, "test")  # type: ignore[arg-type]
    seek_past(reader, "t", {0: 5}, {0}, skipped, "test")  # type: ignore[arg-type]
    seek_past(reader, "t", {0: 5}, {0}, skipped, "test")  # type: ignore[arg-type]
    seek_past(reader, "t", {0: 12}, {0}, skipped, "test")  # type: ignore[arg-type]
    assert reader.seeks == [("t", 0, 5), ("t", 0, 6), ("t", 0, 7), ("t", 0, 12)]
    assert skipped == {0: 12}


def test_a_consumer_that_refuses_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    reader = Reader(fail=True)
    store_hints(reader, "t", {0: 1}, {0}, "intake")  # type: ignore[arg-type]
    seek_past(reader, "t", {0: 4}, {0}, {}, "intake")  # type: ignore[arg-type]
    assert "intake: seeking past unreadable offset 3 of partition 0 failed" in caplog.text
