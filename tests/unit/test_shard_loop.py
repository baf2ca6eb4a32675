"""The shard loop with a fake consumer and fake runners: ownership follows the group's callbacks
(which run on the loop's own thread), a runner that is revoked, fenced or failing is closed, and
an unreadable record is a dead letter the shard goes past."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agents import shard_loop
from agents.forwarding import Outgoing
from agents.inbox_messages import sort_messages
from agents.shard_loop import ShardLoop
from agents.shard_runner import InboxRecord, ShardFencedError
from streams import state_dir
from streams.kafka_native import KafkaError
from streams.settings import Settings
from streams.state_dir import FULL, BackOff
from streams.topics import Topics
from tests.unit.fake_kafka import FakeConsumer, FakeMessage


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


def test_an_assigned_partition_is_read_from_its_runners_next_offset(settings: Settings) -> None:
    _, reader = _run(settings, [("assign", [0]), [FakeMessage(0, 8),
                                                 FakeMessage(0, 7)]])
    (runner,) = FakeRunner.opened
    assert runner.batches == [[7, 8]]  # in offset order
    assert reader.stored == [(0, 9)]
    assert reader.closed and runner.closed  # stopping closes the consumer and the runners
    assert min(reader.waits) == 1.0  # no standbys: an idle loop blocks in poll, never spins
    assert (settings.home / "worker" / "owned.json").read_text().endswith('"shards": []}')


def test_a_worker_that_lost_its_partition_decides_nothing_more_for_it(
    settings: Settings,
) -> None:
    _run(settings, [("assign", [0, 1]), ("revoke", [1]),
                    [FakeMessage(1, 7), FakeMessage(0, 7)]])
    by_index = {r.index: r for r in FakeRunner.opened}
    assert len(FakeRunner.opened) == 2  # no runner opened again for the revoked partition
    assert by_index[1].closed and by_index[1].batches == []
    assert by_index[0].batches == [[7]]


def test_a_fenced_runner_is_closed_and_its_shard_waits_a_session(settings: Settings) -> None:
    FakeRunner.fail_with = ShardFencedError("fenced")
    _run(settings, [("assign", [0]), [FakeMessage(0, 7)], [FakeMessage(0, 8)]])
    (runner,) = FakeRunner.opened  # the second batch opened no runner: within the session
    assert runner.closed and runner.batches == []


def test_a_batch_that_raises_drops_the_runner_and_the_next_batch_recovers(
    settings: Settings,
) -> None:
    FakeRunner.fail_with = RuntimeError("a bug")
    _, reader = _run(settings, [("assign", [0]), [FakeMessage(0, 7)],
                                [FakeMessage(0, 8)]])
    first, second = FakeRunner.opened
    assert first.closed and first.batches == []
    assert second.batches == [[8]]  # (the runner reads offset 7 again through its gap reader)
    assert reader.stored == [(0, 9)]


_FULL = Exception("IO error: No space left on device: While appending to file: "
                  "/x/shard-a.db/000004.log: No space left on device")


def _run_paused(settings: Settings, script: list[Any],
                probes: list[str | None]) -> tuple[ShardLoop, FakeConsumer]:
    """As ``_run``, with no back-off delay and the directory probe answering ``probes``."""
    holder: dict[str, FakeConsumer] = {}
    loop = ShardLoop(settings, batch_max=100, session_timeout_s=10.0, standby_interval_s=0,
                     make_consumer=lambda: holder["c"])
    loop._back_off = BackOff(0.0, 0.0)
    holder["c"] = FakeConsumer(loop, script)
    answers = list(probes)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shard_loop, "probe", lambda _d: answers.pop(0) if answers else None)
        loop.run()
    assert answers == []  # every probe was asked
    return loop, holder["c"]


def test_a_full_state_directory_pauses_the_shards_says_so_once_and_resumes(
    settings: Settings, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    FakeRunner.fail_with = _FULL
    _, reader = _run_paused(settings, [("assign", [0]), [FakeMessage(0, 7)],
                                       [FakeMessage(0, 8)], [FakeMessage(0, 9)]],
                            probes=[FULL, None])
    first, second = FakeRunner.opened
    assert first.closed and first.batches == []
    # resumed after the second probe (the runner reads offset 7 again through its gap reader)
    assert second.batches == [[8], [9]]
    assert reader.pauses[:-1] == [("pause", [0])] * (len(reader.pauses) - 1)
    assert reader.pauses[-1] == ("resume", [0])
    assert reader.stored == [(0, 9), (0, 10)]  # no hint for the batch that was not stored
    said = [r for r in caplog.records if "no space left on device (ENOSPC)" in r.getMessage()]
    assert len(said) == 1 and str(settings.home / "worker") in said[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)  # no traceback
    assert state_dir.alarm.troubles() == []  # cleared after the batch that landed


def test_an_unreadable_record_is_a_dead_letter_and_the_partition_goes_past_it(
    settings: Settings, monkeypatch: pytest.MonkeyPatch,
) -> None:
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
        FakeMessage(0, 7), FakeMessage(0, 8, error=bad),
        FakeMessage(0, 9, headers=UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"))]])
    assert len(sent) == 2 and all(letter.topic == Topics(settings).dead_letters for letter in sent)
    (runner,) = FakeRunner.opened
    assert runner.batches == [[7, 8, 9]]  # 8 and 9 as markers: not a gap, decide nothing
    assert reader.seeks == [(0, 10)]


def test_messages_are_sorted_into_records_letters_and_errors() -> None:
    topic = "inbox"
    eof = KafkaError(KafkaError._PARTITION_EOF)
    away = KafkaError(KafkaError._TRANSPORT, "broker away")
    batch = sort_messages([
        FakeMessage(1, 5, headers=[("seal", b"x")]), FakeMessage(0, 3, error=eof),
        FakeMessage(0, -1, error=away), FakeMessage(1, 4),
        FakeMessage(1, 6, error=KafkaError(KafkaError._BAD_MSG, "crc")),
    ], topic, "letters")
    assert {p: [(r.offset, r.last) for r in rs] for p, rs in batch.records.items()} == {
        1: [(4, -1), (5, -1), (6, 6)]}
    assert batch.records[1][1].headers == (("seal", b"x"),)
    assert batch.records[1][0].timestamp_ms == 1004
    assert len(batch.letters) == 1 and batch.skip == {1: 7}
    assert len(batch.errors) == 1 and "broker away" in batch.errors[0]
