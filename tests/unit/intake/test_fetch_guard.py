"""An unreadable record batch becomes one marker record instead of an endless error."""

from __future__ import annotations

import gzip

import pytest
from aiokafka.consumer.fetcher import READ_UNCOMMITTED, PartitionRecords
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.structs import TopicPartition

from agents.fetch_guard import GuardedPartitionRecords, UnreadableBatch, dead_letter_for
from schemas import decode
from tests.raw_produce import RawRecord, record_batch

TP = TopicPartition("t.requests", 0)


def with_offset(batch: bytes, base: int) -> bytes:
    return base.to_bytes(8, "big") + batch[8:]


def fetched(*batches: bytes, guarded: bool = True) -> list[object]:
    cls = GuardedPartitionRecords if guarded else PartitionRecords
    records = cls(TP, MemoryRecords(b"".join(batches)), [], 0, None, None, True,
                  READ_UNCOMMITTED)
    return list(records)


GOOD = [RawRecord(b"k0", b"first"), RawRecord(b"k1", b"second")]
TRAILING_GARBAGE = record_batch([RawRecord(b"k", b"lost")], "gzip",
                                lambda p: gzip.compress(p) + b"trailing garbage")


def test_aiokafka_alone_raises_on_a_gzip_payload_with_trailing_garbage() -> None:
    with pytest.raises(OSError, match="Not a gzipped file"):
        fetched(TRAILING_GARBAGE, guarded=False)


def test_a_bad_batch_between_good_ones_is_one_marker_at_its_offsets() -> None:
    records = fetched(record_batch(GOOD), with_offset(TRAILING_GARBAGE, 2),
                      with_offset(record_batch(GOOD, "gzip", gzip.compress), 3))
    values = [r.value for r in records]  # type: ignore[attr-defined]
    assert values[:2] == [b"first", b"second"]
    marker = values[2]
    assert isinstance(marker, UnreadableBatch)
    assert (marker.first, marker.last) == (2, 2)
    assert "BadGzipFile" in marker.error
    assert [r.offset for r in records] == [0, 1, 2, 3, 4]  # type: ignore[attr-defined]
    assert values[3:] == [b"first", b"second"]


def test_a_bad_crc_and_a_header_key_that_is_not_utf8_are_markers_too() -> None:
    bad_crc = record_batch(GOOD, corrupt_crc=True)
    bad_header = with_offset(record_batch([RawRecord(b"k", b"v", ((b"\xff", b"x"),))]), 2)
    records = fetched(bad_crc, bad_header)
    markers = [r.value for r in records]  # type: ignore[attr-defined]
    assert all(isinstance(m, UnreadableBatch) for m in markers)
    assert [(m.first, m.last) for m in markers] == [(0, 1), (2, 2)]
    assert "CRC" in markers[0].error
    assert "UnicodeDecodeError" in markers[1].error


def test_a_marker_is_dead_lettered_by_position() -> None:
    (record,) = fetched(with_offset(TRAILING_GARBAGE, 40))
    letter = dead_letter_for("t.requests", "t.dead-letters", record)
    assert letter is not None
    _, body = decode(letter.value)
    assert (body["source_topic"], body["partition"], body["offset"]) == ("t.requests", 0, 40)
    assert body["error"].startswith("UnreadableBatch: t.requests[0] offset 40: BadGzipFile")


def test_a_client_cannot_forge_a_marker() -> None:
    (record,) = list(fetched(record_batch([RawRecord(b"k", b"")])))
    assert dead_letter_for("t", "d", record) is None
