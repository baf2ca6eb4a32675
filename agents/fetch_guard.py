"""A record batch the worker cannot read becomes one marker record, never a crash loop.

aiokafka decodes record batches lazily, while faust drains the fetched records
(``PartitionRecords._unpack_records``, called from ``Fetcher.fetched_records``). A batch with a
bad CRC, a codec the client lacks, or a compressed payload the decompressor refuses raises
there, out of ``getmany``, into faust's fetcher, which crashes the worker; the position has not
moved, so a restarted worker fetches the same batch and crashes again.

:func:`install` replaces aiokafka's ``PartitionRecords`` with :class:`GuardedPartitionRecords`,
which decodes each batch whole before yielding any of its records. A batch that fails yields a
single marker record instead: its offset is the batch's last offset (so the position moves past
the batch, and faust commits past it only once the marker is acknowledged) and its value an
:class:`UnreadableBatch`, a ``bytes`` subclass carrying the first and last offset and the error.
A record from a client can never be one (it is a Python type, not bytes on the wire). Each
agent dead-letters markers by position (see :func:`dead_letter_for`) before it acknowledges
them.
"""

from __future__ import annotations

import gzip
import importlib
import io
import logging
from collections.abc import Iterator
from typing import Any

from aiokafka.consumer import fetcher
from aiokafka.structs import ConsumerRecord

from agents.forwarding import Outgoing, dead_letter

__all__ = ["MAX_INFLATED_BYTES", "GuardedPartitionRecords", "UnreadableBatch",
           "bounded_gzip_decode", "dead_letter_for", "install"]

log = logging.getLogger(__name__)

_ORIGINAL = fetcher.PartitionRecords

MAX_INFLATED_BYTES = 64 << 20
"""The most a gzip batch read through aiokafka may inflate to (Sluice's producers compress
nothing: a legitimate batch inflates to about its own size, at most ~1 MiB)."""


_GZIP_READERS = ("aiokafka.codec", "aiokafka.record.default_records",
                 "aiokafka.record.legacy_records", "aiokafka.record._crecords.default_records",
                 "aiokafka.record._crecords.legacy_records")
"""The modules that call aiokafka's ``gzip_decode`` by their own global name."""


def bounded_gzip_decode(payload: Any, limit: int = MAX_INFLATED_BYTES) -> bytes:
    """aiokafka's ``gzip_decode``, refusing a payload that inflates to more than ``limit``.

    aiokafka inflated a gzip batch whole with Python's ``gzip`` (a 1 MiB batch: a ~1 GB
    record, red team 7 Dec 2026); this reads at most ``limit`` + 1 bytes of it, and raises
    ``ValueError`` beyond, which :class:`GuardedPartitionRecords` turns into a marker (and
    the agent into an ``UnreadableBatch`` dead letter). A payload within the limit is read
    to its end as before (a further member is read too; trailing garbage still raises
    ``BadGzipFile``)."""
    with gzip.GzipFile(fileobj=io.BytesIO(payload), mode="r") as gzipper:
        data = gzipper.read(limit + 1)
        if len(data) > limit:
            raise ValueError(f"the gzip payload of {len(payload)} bytes inflates to more "
                             f"than {limit} bytes")
    return data


class UnreadableBatch(bytes):
    """The value of a marker record: a batch at ``first``..``last`` that could not be read."""

    first: int
    last: int
    error: str

    def __new__(cls, first: int, last: int, error: str) -> UnreadableBatch:
        marker = super().__new__(cls, b"")
        marker.first, marker.last, marker.error = first, last, error
        return marker

    def describe(self, topic: str, partition: int) -> str:
        """The dead letter's reason: the position and what went wrong."""
        span = f"offset {self.first}" if self.first == self.last else (
            f"offsets {self.first}..{self.last}")
        return f"UnreadableBatch: {topic}[{partition}] {span}: {self.error}"


class GuardedPartitionRecords(_ORIGINAL):  # type: ignore[misc,valid-type]
    """aiokafka's ``PartitionRecords``, with each batch decoded whole or turned into a marker."""

    def _unpack_records(self) -> Iterator[Any]:
        records = self._records
        while records.has_next():
            start = int(self.next_fetch_offset)  # type: ignore[has-type]
            try:
                batch = records.next_batch()
            except Exception as exc:  # the batch header itself is unreadable
                yield self._marker(start, start, exc)
                self.next_fetch_offset = start + 1
                return
            try:
                decoded = self._decode(batch)
            except Exception as exc:
                first = max(batch.base_offset, start)
                yield self._marker(first, max(batch.next_offset - 1, first), exc)
                self.next_fetch_offset = max(batch.next_offset, first + 1)
                continue
            if decoded is None:
                continue
            for record in decoded:
                self.next_fetch_offset = record.offset + 1
                yield record
            self.next_fetch_offset = batch.next_offset

    def _decode(self, batch: Any) -> list[Any] | None:
        """The batch's records to yield, or None for a skipped (control, aborted) batch."""
        if self._check_crcs and not batch.validate_crc():
            raise fetcher.Errors.CorruptRecordException(
                f"invalid CRC (stored {batch.crc:#010x})")
        if self._isolation_level == fetcher.READ_COMMITTED and batch.producer_id is not None:
            self._consume_aborted_up_to(batch.base_offset)
            if batch.is_control_batch and self._contains_abort_marker(batch):
                self._aborted_producers.discard(batch.producer_id)
            if batch.is_transactional and batch.producer_id in self._aborted_producers:
                self.next_fetch_offset = batch.next_offset
                return None
        if batch.is_control_batch:
            self.next_fetch_offset = batch.next_offset
            return None
        return [self._consumer_record(self._tp, record) for record in batch
                if record.offset >= self.next_fetch_offset]

    def _marker(self, first: int, last: int, exc: BaseException) -> Any:
        error = f"{type(exc).__name__}: {exc}"
        log.error("unreadable record batch at %s offsets %d..%d: %s", self._tp, first, last, error)
        return ConsumerRecord(
            self._tp.topic, self._tp.partition, last, -1, 0, None,
            UnreadableBatch(first, last, error), None, -1, 0, [],
        )


def install() -> None:
    """Make every aiokafka consumer of this process use :class:`GuardedPartitionRecords`, and
    its gzip reader :func:`bounded_gzip_decode` (in each module that imported aiokafka's,
    the compiled record readers too)."""
    fetcher.PartitionRecords = GuardedPartitionRecords
    for name in _GZIP_READERS:
        try:
            module = importlib.import_module(name)
        except ImportError:  # aiokafka without its compiled readers
            continue
        if hasattr(module, "gzip_decode"):
            module.gzip_decode = bounded_gzip_decode  # type: ignore[attr-defined]


def dead_letter_for(topic: str, dead_letters: str, message: Any) -> Outgoing | None:
    """The dead letter for a marker message, or None when ``message`` is not a marker."""
    value = message.value
    if not isinstance(value, UnreadableBatch):
        return None
    return dead_letter(
        dead_letters, source_topic=topic, partition=message.partition, offset=value.first,
        key=None, value=b"", error=value.describe(topic, message.partition),
    )
