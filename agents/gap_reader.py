"""Read a range of offsets of one partition directly, past the consumer, with a bounded wait.

The shard runner and the intake each keep the next offset they expect per partition; when
their consumer hands them a batch that starts past it (a start from a group's offset, a
runner that opened late; faust, which fed both until 2026-12-05, acknowledged records it never
delivered: docs/ARCHITECTURE.md, "Where the intake resumes"), they read the
skipped offsets ``[first, end)`` here, with a confluent-kafka consumer assigned to the partition
(no group, nothing committed).

Offsets are not all records: a transaction's commit or abort marker takes an offset and is
never delivered, and with ``read_committed`` aborted records are not either. So the last
offsets of a range may never come; the read ends when a delivered record or the end-of-partition
event (``enable.partition.eof``) is at or past ``end``: nothing readable is left in the range.

A poll that returns nothing or an error is retried; after ``max_failures`` of them in a row
the read raises :class:`GapUnreadableError` (a ``TimeoutError``) naming the partition, the
offset it stood at and the last error, instead of waiting for ever.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import KafkaError, TopicPartition

from streams.clients import consumer

__all__ = ["GapRecord", "GapUnreadableError", "read_range", "read_with"]


@dataclass(frozen=True, slots=True)
class GapRecord:
    """One record read directly; the attributes a faust message has that the agents use."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()

    @property
    def timestamp(self) -> float:
        """The record's time in seconds, like faust's ``Message.timestamp``."""
        return self.timestamp_ms / 1000


class GapUnreadableError(TimeoutError):
    """The range could not be read: too many polls in a row gave nothing or an error."""

    def __init__(self, message: str, at: int) -> None:
        super().__init__(message)
        self.at = at
        """The first offset of the range that was not read."""


class _Polling(Protocol):
    def assign(self, partitions: list[TopicPartition]) -> None: ...
    def poll(self, timeout: float) -> Any: ...
    def close(self) -> None: ...


def read_range(bootstrap: str, topic: str, partition: int, first: int, end: int, *,
               isolation: str = "read_uncommitted", poll_s: float = 1.0,
               max_failures: int = 10) -> Iterator[GapRecord]:
    """The records of ``topic[partition]`` at offsets ``[first, end)``, in offset order."""

    def make() -> _Polling:
        return consumer(bootstrap, overrides={"isolation.level": isolation,
                                              "enable.partition.eof": True})

    return read_with(make, topic, partition, first, end, poll_s=poll_s,
                     max_failures=max_failures)


def read_with(make: Callable[[], _Polling], topic: str, partition: int, first: int, end: int,
              *, poll_s: float = 1.0, max_failures: int = 10) -> Iterator[GapRecord]:
    """:func:`read_range` with the consumer made by ``make`` (it is closed at the end)."""
    if first >= end:
        return
    reader = make()
    try:
        reader.assign([TopicPartition(topic, partition, first)])
        at, failures, last_error = first, 0, "no record within the poll timeout"
        while at < end:
            message = reader.poll(poll_s)
            error = None if message is None else message.error()
            if message is None or (error is not None and not _is_eof(error)):
                failures += 1
                if error is not None:
                    last_error = str(error)
                if failures >= max_failures:
                    raise GapUnreadableError(
                        f"{topic}[{partition}]: offsets {at}..{end - 1} not readable after "
                        f"{failures} polls of {poll_s} s: {last_error}", at)
                continue
            failures = 0
            offset = message.offset()
            if error is not None:  # end of partition: nothing past ``offset`` exists yet
                if offset is not None and offset >= end:
                    return  # the rest of the range was markers (or aborted records)
                continue
            at = offset + 1
            if offset < end:
                yield GapRecord(topic, partition, offset, message.timestamp()[1],
                                message.key(), message.value(),
                                tuple(_headers(message.headers())))
    finally:
        reader.close()


def _is_eof(error: Any) -> bool:
    return bool(error.code() == KafkaError._PARTITION_EOF)


def _headers(headers: Any) -> list[tuple[str, bytes]]:
    return [(str(k), bytes(v or b"")) for k, v in headers or ()]
