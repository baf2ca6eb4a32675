"""The shard loop with a fake consumer and fake runners: ownership follows the group's callbacks
(which run on the loop's own thread), a runner that is revoked, fenced or failing is closed, and
an unreadable record is a dead letter the shard goes past."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from agents import shard_loop
from agents.forwarding import Outgoing
from agents.inbox_messages import sort_messages
from agents.shard_loop import ShardLoop
from agents.shard_runner import InboxRecord, ShardFencedError
from streams.kafka_native import KafkaError, TopicPartition
from streams.settings import Settings
from streams.topics import Topics


class FakeMessage:
    def __init__(self, topic: str, partition: int, offset: int, value: bytes = b"v",
                 error: KafkaError | None = None, headers: Any = None) -> None:
        self._topic, self._partition, self._offset = topic, partition, offset
        self._value, self._error, self._headers = value, error, headers

    def error(self) -> KafkaError | None:
        return self._error

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return (1, 1000 + self._offset)

    def headers(self) -> Any:
        if isinstance(self._headers, Exception):
            raise self._headers
        return self._headers


class FakeConsumer:
    """Plays a script: ``("assign", [p])`` / ``("revoke", [p])`` run the callbacks inside
    ``poll`` (as librdkafka does), a list of messages is one batch; then the loop stops."""

    def __init__(self, loop: ShardLoop, script: list[Any]) -> None:
        self.loop, self.script = loop, list(script)
        self.callbacks: dict[str, Any] = {}
        self.assigned: list[TopicPartition] = []
        self.seeks: list[tuple[int, int]] = []
        self.stored: list[tuple[int, int]] = []
        self.waits: list[float] = []
        self.closed = False

    def subscribe(self, topics: list[str], **callbacks: Any) -> None:
        self.topic = topics[0]
        self.callbacks = callbacks

    def poll(self, timeout: float) -> Any:
        self.waits.append(timeout)
        while self.script:
            step = self.script.pop(0)
            if isinstance(step, tuple):
                kind, partitions = step
                tps = [TopicPartition(self.topic, p) for p in partitions]
                self.callbacks["on_assign" if kind == "assign" else "on_revoke"](self, tps)
                continue
            self._rest = step[1:]
            return step[0]
        self.loop.stopping.set()
        return None

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        rest, self._rest = self._rest, []
        return rest

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.extend(partitions)

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        gone = {tp.partition for tp in partitions}
        self.assigned = [tp for tp in self.assigned if tp.partition not in gone]

    def store_offsets(self, offsets: list[TopicPartition]) -> None:
        self.stored.extend((tp.partition, tp.offset) for tp in offsets)

    def seek(self, tp: TopicPartition) -> None:
        self.seeks.append((tp.partition, tp.offset))

    def close(self) -> None:
        self.closed = True
        self.callbacks["on_revoke"](self, list(self.assigned))


class FakeRunner:
    opened: ClassVar[list[FakeRunner]] = []
    fail_with: ClassVar[BaseException | None] = None

    def __init__(self, _settings: Settings, index: int, _gaps: Any, on_batch: Any = None) -> None:
        self.index, self.batches, self.closed = index, [], False
        self.next_offset = 7
        FakeRunner.opened.append(self)

    def process(self, records: list[InboxRecord]) -> None:
        if FakeRunner.fail_with is not None:
            error, FakeRunner.fail_with = FakeRunner.fail_with, None
            raise error
        self.batches.append([r.offset for r in records])

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    (tmp_path / "worker").mkdir()
    FakeRunner.opened, FakeRunner.fail_with = [], None
    monkeypatch.setattr(shard_loop, "ShardRunner", FakeRunner)
    return Settings(bootstrap="unused:1", prefix="t", shards=2, home=tmp_path)


def _run(settings: Settings, script: list[Any]) -> tuple[ShardLoop, FakeConsumer]:
    holder: dict[str, FakeConsumer] = {}
    loop = ShardLoop(settings, batch_max=100, session_timeout_s=10.0, standby_interval_s=0,
                     make_consumer=lambda: holder["c"])
    holder["c"] = FakeConsumer(loop, script)
    loop.run()
    return loop, holder["c"]


def _inbox(settings: Settings) -> str:
    return Topics(settings).shard_inbox


def test_an_assigned_partition_is_read_from_its_runners_next_offset(settings: Settings) -> None:
    topic = _inbox(settings)
    _, reader = _run(settings, [("assign", [0]), [FakeMessage(topic, 0, 8),
                                                 FakeMessage(topic, 0, 7)]])
    (runner,) = FakeRunner.opened
    assert runner.batches == [[7, 8]]  # in offset order
    assert reader.stored == [(0, 9)]
    assert reader.closed and runner.closed  # stopping closes the consumer and the runners
    assert min(reader.waits) == 1.0  # no standbys: an idle loop blocks in poll, never spins
    assert (settings.home / "worker" / "owned.json").read_text().endswith('"shards": []}')


def test_a_worker_that_lost_its_partition_decides_nothing_more_for_it(
    settings: Settings,
) -> None:
    topic = _inbox(settings)
    _run(settings, [("assign", [0, 1]), ("revoke", [1]),
                    [FakeMessage(topic, 1, 7), FakeMessage(topic, 0, 7)]])
    by_index = {r.index: r for r in FakeRunner.opened}
    assert len(FakeRunner.opened) == 2  # no runner opened again for the revoked partition
    assert by_index[1].closed and by_index[1].batches == []
    assert by_index[0].batches == [[7]]


def test_a_fenced_runner_is_closed_and_its_shard_waits_a_session(settings: Settings) -> None:
    topic = _inbox(settings)
    FakeRunner.fail_with = ShardFencedError("fenced")
    _run(settings, [("assign", [0]), [FakeMessage(topic, 0, 7)], [FakeMessage(topic, 0, 8)]])
    (runner,) = FakeRunner.opened  # the second batch opened no runner: within the session
    assert runner.closed and runner.batches == []


def test_a_batch_that_raises_drops_the_runner_and_the_next_batch_recovers(
    settings: Settings,
) -> None:
    topic = _inbox(settings)
    FakeRunner.fail_with = RuntimeError("a bug")
    _, reader = _run(settings, [("assign", [0]), [FakeMessage(topic, 0, 7)],
                                [FakeMessage(topic, 0, 8)]])
    first, second = FakeRunner.opened
    assert first.closed and first.batches == []
    assert second.batches == [[8]]  # (the runner reads offset 7 again through its gap reader)
    assert reader.stored == [(0, 9)]


def test_an_unreadable_record_is_a_dead_letter_and_the_partition_goes_past_it(
    settings: Settings, monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = _inbox(settings)
    sent: list[Outgoing] = []

    def deliver(_producer: Any, items: list[Outgoing]) -> list[None]:
        assert not FakeRunner.opened[0].batches  # delivered before anything is decided
        sent.extend(items)
        return [None] * len(items)

    monkeypatch.setattr(shard_loop, "produce_and_confirm", deliver)

    class Producer:
        def flush(self, _timeout: float) -> None:
            pass

    monkeypatch.setattr(shard_loop, "producer", lambda _bootstrap: Producer())
    bad = KafkaError(KafkaError._BAD_COMPRESSION, "decompression failed")
    _, reader = _run(settings, [("assign", [0]), [
        FakeMessage(topic, 0, 7), FakeMessage(topic, 0, 8, error=bad),
        FakeMessage(topic, 0, 9, headers=UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"))]])
    assert len(sent) == 2 and all(letter.topic == Topics(settings).dead_letters for letter in sent)
    (runner,) = FakeRunner.opened
    assert runner.batches == [[7, 8, 9]]  # 8 and 9 as markers: not a gap, decide nothing
    assert reader.seeks == [(0, 10)]


def test_messages_are_sorted_into_records_letters_and_errors() -> None:
    topic = "inbox"
    eof = KafkaError(KafkaError._PARTITION_EOF)
    away = KafkaError(KafkaError._TRANSPORT, "broker away")
    batch = sort_messages([
        FakeMessage(topic, 1, 5, headers=[("seal", b"x")]), FakeMessage(topic, 0, 3, error=eof),
        FakeMessage(topic, 0, -1, error=away), FakeMessage(topic, 1, 4),
        FakeMessage(topic, 1, 6, error=KafkaError(KafkaError._BAD_MSG, "crc")),
    ], topic, "letters")
    assert {p: [(r.offset, r.last) for r in rs] for p, rs in batch.records.items()} == {
        1: [(4, -1), (5, -1), (6, 6)]}
    assert batch.records[1][1].headers == (("seal", b"x"),)
    assert batch.records[1][0].timestamp_ms == 1004
    assert len(batch.letters) == 1 and batch.skip == {1: 7}
    assert len(batch.errors) == 1 and "broker away" in batch.errors[0]
