"""A confluent-kafka message and consumer played from a script, for the worker's loops' unit
tests (tests/unit/test_shard_loop.py, tests/unit/intake/test_intake_loop.py)."""

from __future__ import annotations

import threading
from typing import Any, Protocol

from streams.kafka_native import KafkaError, TopicPartition

__all__ = ["FakeConsumer", "FakeMessage"]


class FakeMessage:
    """A fetched record (or an error in its place), as confluent-kafka's ``Message`` gives it."""

    def __init__(self, partition: int, offset: int, value: bytes = b"v",
                 error: KafkaError | None = None, headers: Any = None) -> None:
        self._partition, self._offset = partition, offset
        self._value, self._error, self._headers = value, error, headers

    def error(self) -> KafkaError | None:
        return self._error

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return b"k"

    def value(self) -> bytes:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return (1, 1000 + self._offset)

    def headers(self) -> Any:
        if isinstance(self._headers, Exception):
            raise self._headers
        return self._headers


class _Stoppable(Protocol):
    stopping: threading.Event


class FakeConsumer:
    """Plays a script: ``("assign", [p])`` / ``("revoke", [p])`` run the callbacks inside
    the waiting ``consume`` (or ``poll``; as librdkafka does), a list of messages is one batch;
    a step after the first message of a batch runs inside the ``consume`` that takes the rest.
    Then the loop stops."""

    def __init__(self, loop: _Stoppable, script: list[Any]) -> None:
        self.loop, self.script = loop, list(script)
        self.callbacks: dict[str, Any] = {}
        self.assigned: list[TopicPartition] = []
        self.seeks: list[tuple[int, int]] = []
        self.stored: list[tuple[int, int]] = []
        self.waits: list[float] = []
        self.pauses: list[tuple[str, list[int]]] = []
        self.closed = False
        self._rest: list[Any] = []

    def subscribe(self, topics: list[str], **callbacks: Any) -> None:
        self.topic = topics[0]
        self.callbacks = callbacks

    def memberid(self) -> str | None:
        """In the group (``agents.group_watch`` replaces a consumer left out of it)."""
        return "member-1"

    def _callback(self, step: tuple[str, list[int]]) -> None:
        kind, partitions = step
        tps = [TopicPartition(self.topic, p) for p in partitions]
        self.callbacks["on_assign" if kind == "assign" else "on_revoke"](self, tps)

    def poll(self, timeout: float) -> Any:
        self.waits.append(timeout)
        while self.script:
            step = self.script.pop(0)
            if isinstance(step, tuple):
                self._callback(step)
                continue
            self._rest = step[1:]
            return step[0]
        self.loop.stopping.set()
        return None

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        if timeout > 0:  # the waiting call (``ready_messages``' first): as ``poll``
            first = self.poll(timeout)
            return [] if first is None else [first]
        out = []
        for item in self._rest:
            if isinstance(item, tuple):
                self._callback(item)
            else:
                out.append(item)
        self._rest = []
        return out

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.extend(partitions)

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        gone = {tp.partition for tp in partitions}
        self.assigned = [tp for tp in self.assigned if tp.partition not in gone]

    def store_offsets(self, offsets: list[TopicPartition]) -> None:
        self.stored.extend((tp.partition, tp.offset) for tp in offsets)

    def seek(self, tp: TopicPartition) -> None:
        self.seeks.append((tp.partition, tp.offset))

    def assignment(self) -> list[TopicPartition]:
        return list(self.assigned)

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.pauses.append(("pause", sorted(tp.partition for tp in partitions)))

    def resume(self, partitions: list[TopicPartition]) -> None:
        self.pauses.append(("resume", sorted(tp.partition for tp in partitions)))

    def close(self) -> None:
        self.closed = True
        self.callbacks["on_revoke"](self, list(self.assigned))
