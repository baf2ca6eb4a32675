"""A node daemon's producer or command reader cut off for good by librdkafka (#5301) is
replaced once a new client is answered (``agents.node.link_watch``), and nothing it held is
lost: the reports it failed go out again through the new producer, the new reader starts where
the old one stood."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agents.node import daemon as daemon_module
from agents.node.command_feed import CommandFeed
from agents.node.daemon import NodeDaemon
from agents.node.link_watch import PRODUCER, READER, LinkWatch
from tests.unit.node.test_command_feed import FakeConsumer
from tests.unit.node.test_daemon_pass import FakeProducer, daemon  # noqa: F401 (fixture)


def _inline(work: Callable[[], None]) -> None:
    work()


def test_nothing_is_replaced_before_the_limit_nor_while_the_broker_is_away() -> None:
    answers = [False]
    watch = LinkWatch(60.0, lambda: answers[0], start=_inline)
    assert watch.due(100.0, lease_lapsed_at=50.0, reader_answered_at=99.0) == frozenset()
    assert watch.due(120.0, lease_lapsed_at=50.0, reader_answered_at=119.0) == frozenset()
    assert watch.due(121.0, lease_lapsed_at=50.0, reader_answered_at=120.0) == frozenset()
    answers[0] = True  # the broker is back: probed again only a limit after the last probe
    assert watch.due(150.0, lease_lapsed_at=50.0, reader_answered_at=149.0) == frozenset()
    assert watch.due(180.0, lease_lapsed_at=50.0, reader_answered_at=179.0) == frozenset()
    assert watch.due(181.0, lease_lapsed_at=50.0, reader_answered_at=180.0) == {PRODUCER}


def test_a_reader_silent_while_a_new_client_is_answered_is_replaced_once() -> None:
    probes: list[int] = []
    watch = LinkWatch(60.0, lambda: probes.append(1) is None, start=_inline)
    # asked once a minute (READER_CHECK_S): silent for the limit past that
    assert watch.due(119.0, lease_lapsed_at=None, reader_answered_at=0.0) == frozenset()
    assert not probes
    assert watch.due(120.0, lease_lapsed_at=None, reader_answered_at=0.0) == frozenset()
    assert watch.due(121.0, lease_lapsed_at=None, reader_answered_at=0.0) == {READER}
    assert watch.due(122.0, lease_lapsed_at=None, reader_answered_at=0.0) == frozenset()
    assert len(probes) == 1


def test_what_came_back_while_the_probe_ran_is_not_replaced() -> None:
    watch = LinkWatch(60.0, lambda: True, start=_inline)
    watch.due(130.0, lease_lapsed_at=0.0, reader_answered_at=0.0)  # both out: probed
    # the heartbeats are delivered again meanwhile: only the reader is still out
    assert watch.due(131.0, lease_lapsed_at=None, reader_answered_at=0.0) == {READER}


def test_the_probe_runs_off_the_loop_and_one_at_a_time() -> None:
    release, started = threading.Event(), []

    def slow_probe() -> bool:
        started.append(1)
        release.wait(10)
        return True

    watch = LinkWatch(0.0, slow_probe)  # on a thread of its own
    assert watch.due(1.0, lease_lapsed_at=0.0, reader_answered_at=1.0) == frozenset()
    assert watch.due(2.0, lease_lapsed_at=0.0, reader_answered_at=2.0) == frozenset()
    release.set()
    for _ in range(100):
        if watch.due(3.0, lease_lapsed_at=0.0, reader_answered_at=3.0):
            break
        threading.Event().wait(0.02)
    assert len(started) == 1


class Checked(FakeConsumer):
    """A reader whose partition's end is asked (``get_watermark_offsets``)."""

    def __init__(self, answers: bool) -> None:
        super().__init__([])
        self.answers, self.asked = answers, 0
        self.assigned: list[Any] = []

    def get_watermark_offsets(self, _tp: Any, timeout: float = -1) -> tuple[int, int]:
        self.asked += 1
        if not self.answers:
            raise RuntimeError("timed out")
        return 0, 0

    def assign(self, partitions: list[Any]) -> None:
        self.assigned = partitions

    def close(self) -> None:
        pass


@pytest.mark.parametrize("answers", [True, False])
def test_the_feed_says_when_its_reader_last_answered(answers: bool) -> None:
    now = [1000.0]
    reader = Checked(answers)
    feed = CommandFeed(reader, check=lambda r: r.get_watermark_offsets(None, timeout=10),
                       check_every_s=5.0, clock=lambda: now[0])
    before = feed.answered_at
    now[0] += 6.0
    feed.start()
    try:
        for _ in range(200):
            if reader.asked:
                break
            threading.Event().wait(0.01)
        threading.Event().wait(0.05)
        assert reader.asked >= 1
        assert (feed.answered_at > before) is answers
    finally:
        feed.stop()


class Purged(FakeProducer):
    """A producer cut off from every broker: nothing is delivered until ``purge`` fails it."""

    def __init__(self, offset_file: Path) -> None:
        super().__init__(offset_file)
        self.purged = False

    def purge(self) -> None:
        self.purged = True

    def poll(self, timeout: float = 0) -> int:
        if self.purged:
            failed, self.callbacks = self.callbacks, []
            for callback in failed:
                if callback is not None:
                    callback("_PURGE_QUEUE", None)
        return 0


def test_a_cut_off_producer_is_replaced_and_its_reports_go_out_again(
        daemon: NodeDaemon, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    old = Purged(daemon._offset_file.path)
    daemon._producer = old  # type: ignore[assignment]
    daemon._outbox.use(old)
    new = FakeProducer(daemon._offset_file.path)
    monkeypatch.setattr(daemon_module, "node_producer", lambda *_a, **_k: new)
    daemon._outbox.send(daemon.topics.requests, "sRUN", "ReportJobExit", {
        "job_sluid": "sJOB", "run_sluid": "sRUN", "node_sluid": daemon.node_sluid,
        "node_name": daemon.name, "exit_code": 0})
    daemon._links = LinkWatch(60.0, lambda: True, start=_inline)
    daemon._lease.lapsed_at = 0.0
    feed = CommandFeed(FakeConsumer([]))
    feed.answered_at = float("inf")  # the reader is fine
    assert daemon._mend_links(feed) is feed  # probed
    assert daemon._producer is old
    assert daemon._mend_links(feed) is feed  # replaced
    assert daemon._producer is new and old.purged
    daemon._outbox.resend_undelivered()
    assert [topic for topic, _key in new.produced] == [daemon.topics.requests]


def test_a_silent_reader_is_replaced_where_the_old_one_stood(
        daemon: NodeDaemon, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    first, second = Checked(True), Checked(True)
    readers = iter([first, second])
    monkeypatch.setattr(daemon, "_new_reader", lambda: next(readers))
    monkeypatch.setattr(daemon, "_start_offset", lambda _reader, attempts=30: 17)
    old_feed = daemon._start_feed(daemon._assigned_reader()[0])
    assert first.assigned[0].offset == 17
    daemon._links = LinkWatch(60.0, lambda: True, start=_inline)
    old_feed.answered_at = -1000.0
    try:
        daemon._mend_links(old_feed)  # probed
        feed = daemon._mend_links(old_feed)
        assert feed is not old_feed and daemon._feed is feed
        assert second.assigned[0].offset == 17  # no offset file: where the first began
    finally:
        (daemon._feed or old_feed).stop()
        old_feed.stop()


def test_a_real_producer_let_go_fails_what_it_held_at_once() -> None:
    """librdkafka's own producer, its broker unreachable: ``purge`` and a ``poll`` hand every
    record's delivery report back as failed (the daemon's outbox sends its reports again)."""
    from agents.node.link_watch import let_go
    from streams.clients import node_producer

    producer = node_producer("127.0.0.1:1", log_level=0)
    failed: list[Any] = []
    for i in range(3):
        producer.produce("t", b"v%d" % i, on_delivery=lambda err, _m: failed.append(err))
    let_go(producer)
    assert len(failed) == 3 and all(err is not None for err in failed)
