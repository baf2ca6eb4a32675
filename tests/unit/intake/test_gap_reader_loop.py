"""The gap reader's loop: where it stops, and that it gives up after a bounded number of polls.

The consumer is scripted here (what librdkafka returns, poll by poll); the reader against the
real broker, with real transaction markers, is tests/integration/test_gap_reader.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from agents.gap_reader import GapUnreadableError, read_with


class Msg:
    def __init__(self, offset: int, error: KafkaError | None = None) -> None:
        self._offset, self._error = offset, error

    def offset(self) -> int:
        return self._offset

    def error(self) -> KafkaError | None:
        return self._error

    def value(self) -> bytes:
        return b"v%d" % self._offset

    def key(self) -> bytes:
        return b"k"

    def timestamp(self) -> tuple[int, int]:
        return (1, 1000 + self._offset)

    def headers(self) -> list[tuple[str, bytes]]:
        return [("h", b"x")]


class Scripted:
    def __init__(self, script: list[Msg | None]) -> None:
        self.script, self.assigned, self.closed, self.polls = list(script), None, False, 0

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = [(p.topic, p.partition, p.offset) for p in partitions]

    def poll(self, timeout: float) -> Any:
        self.polls += 1
        return self.script.pop(0) if self.script else None

    def close(self) -> None:
        self.closed = True


EOF_AT = lambda offset: Msg(offset, KafkaError(KafkaError._PARTITION_EOF))  # noqa: E731


def read(reader: Scripted, first: int, end: int, failures: int = 3) -> list[int]:
    return [r.offset for r in read_with(lambda: reader, "t", 2, first, end, poll_s=0.0,
                                        max_failures=failures)]


def test_it_reads_from_first_and_stops_at_end() -> None:
    reader = Scripted([Msg(3), Msg(4), Msg(5), Msg(6)])
    assert read(reader, 3, 6) == [3, 4, 5]
    assert reader.assigned == [("t", 2, 3)] and reader.closed


def test_trailing_transaction_markers_end_the_read_at_the_partition_end() -> None:
    reader = Scripted([Msg(3), Msg(4), EOF_AT(7)])  # offsets 5 and 6 are commit markers
    assert read(reader, 3, 7) == [3, 4]


def test_a_record_past_the_end_ends_it_when_markers_sit_inside_the_range() -> None:
    reader = Scripted([Msg(3), Msg(6)])  # 4 and 5 are markers; 6 is past the range
    assert read(reader, 3, 6) == [3]


def test_an_end_of_partition_below_the_end_keeps_waiting() -> None:
    reader = Scripted([Msg(3), EOF_AT(4), Msg(4)])  # 4 was not replicated yet
    assert read(reader, 3, 5) == [3, 4]


def test_errors_are_retried_then_it_gives_up_with_the_offset_and_the_error() -> None:
    broken = KafkaError(KafkaError._TRANSPORT, "broker gone")
    reader = Scripted([Msg(3), Msg(0, broken), Msg(0, broken), Msg(0, broken), Msg(4)])
    with pytest.raises(GapUnreadableError, match=r"t\[2\]: offsets 4\.\.5.*broker gone") as exc:
        read(reader, 3, 6)
    assert exc.value.at == 4
    assert reader.polls == 4 and reader.closed


def test_a_success_resets_the_count_of_failures() -> None:
    broken = KafkaError(KafkaError._TRANSPORT, "blip")
    reader = Scripted([Msg(0, broken), Msg(0, broken), Msg(3), None, None, Msg(4)])
    assert read(reader, 3, 5) == [3, 4]


def test_nothing_at_all_is_a_timeout_not_a_hang() -> None:
    reader = Scripted([])
    with pytest.raises(TimeoutError, match="no record within the poll timeout"):
        read(reader, 0, 1, failures=5)
    assert reader.polls == 5


def test_an_empty_range_opens_no_consumer() -> None:
    def make() -> Scripted:
        raise AssertionError("no consumer for an empty range")

    assert list(read_with(make, "t", 0, 5, 5)) == []
