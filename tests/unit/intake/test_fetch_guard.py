"""An unreadable record batch becomes one marker record instead of an endless error."""

from __future__ import annotations

import gzip
import importlib
import tracemalloc

import pytest
from aiokafka.consumer.fetcher import READ_UNCOMMITTED, PartitionRecords
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.structs import TopicPartition

from agents import fetch_guard
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


def test_a_gzip_batch_inflating_past_the_bound_is_a_marker_not_a_gigabyte(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """aiokafka inflated a gzip batch whole with Python's ``gzip`` (a 1 MiB batch: a ~1 GB
    record, red team 7 Dec 2026); once installed, its readers stop past the bound, and the
    batch is a marker like any unreadable one (the guard's agents dead-letter it)."""
    for name in fetch_guard._GZIP_READERS:  # put back after the test, whatever install did
        module = importlib.import_module(name)
        monkeypatch.setattr(module, "gzip_decode", module.gzip_decode)
    monkeypatch.setattr(fetch_guard, "MAX_INFLATED_BYTES", 1 << 20)
    monkeypatch.setattr(fetch_guard.bounded_gzip_decode, "__defaults__", (1 << 20,))
    fetch_guard.install()
    bomb = record_batch([RawRecord(b"k", bytes(8 << 20))], "gzip", gzip.compress)
    fine = record_batch([RawRecord(b"k", bytes(1 << 19))], "gzip", gzip.compress)
    tracemalloc.start()
    try:
        records = fetched(bomb, with_offset(fine, 1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    marker = records[0].value  # type: ignore[attr-defined]
    assert isinstance(marker, UnreadableBatch)
    assert "inflates to more than 1048576 bytes" in marker.error
    assert records[1].value == bytes(1 << 19)  # type: ignore[attr-defined]
    assert peak < 6 << 20, f"{peak} bytes allocated"  # the 8 MiB value was never made whole
    assert fetched(with_offset(TRAILING_GARBAGE, 0))[0].value.error.startswith(  # type: ignore[attr-defined]
        "BadGzipFile")
