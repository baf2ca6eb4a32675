"""The node daemon's command reader thread (``agents.node.command_feed``) with a fake consumer."""

from __future__ import annotations

import select
import threading
from typing import Any

from agents.node.command_feed import CommandFeed, Position


class FakeConsumer:
    """Hands out ``messages`` at most ``batch`` per consume, then waits (nothing new)."""

    def __init__(self, messages: list[Any], fail_after: bool = False, batch: int = 1) -> None:
        self.messages = list(messages)
        self.fail_after = fail_after
        self.batch = batch
        self.idle = threading.Event()  # set once every message was handed out and acted on
        self.empty = 0
        self.threads: set[str] = set()

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        self.threads.add(threading.current_thread().name)
        if self.messages:
            taken = self.messages[:min(num_messages, self.batch)]
            del self.messages[:len(taken)]
            return taken
        if self.fail_after:
            raise RuntimeError("broker gone")
        if timeout == 0:  # the feed takes what else has come: an empty answer is not quiet
            return []
        self.empty += 1
        if self.empty > 1:  # the feed has acted on the first empty wait (a quiet position)
            self.idle.set()
        threading.Event().wait(min(timeout, 0.05))
        return []


class Msg:
    """A message with a key and an offset (no error)."""

    def __init__(self, key: str, offset: int) -> None:
        self._key, self._offset = key, offset

    def key(self) -> bytes:
        return self._key.encode()

    def offset(self) -> int:
        return self._offset

    def __repr__(self) -> str:
        return f"{self._key}@{self._offset}"


def _readable(fd: int, timeout_s: float = 10.0) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(int(timeout_s * 1000)))


def test_messages_reach_the_loop_in_the_order_read_and_wake_its_descriptor() -> None:
    reader = FakeConsumer(["m1", "m2", "m3"])
    feed = CommandFeed(reader)
    feed.start()
    try:
        assert reader.idle.wait(10)
        assert _readable(feed.fileno())
        assert feed.take(10) == ["m1", "m2", "m3"]
        assert not _readable(feed.fileno(), 0.1)  # taken: nothing wakes the loop
        assert reader.threads == {"commands"}  # only the feed's thread touched the consumer
    finally:
        feed.stop()


def test_a_pass_takes_at_most_its_share_and_the_rest_wakes_the_next_pass() -> None:
    reader = FakeConsumer([f"m{i}" for i in range(5)])
    feed = CommandFeed(reader)
    feed.start()
    try:
        assert reader.idle.wait(10)
        assert feed.take(2) == ["m0", "m1"]
        assert _readable(feed.fileno(), 1.0)
        assert feed.take(2) == ["m2", "m3"]
        assert feed.take(2) == ["m4"]
    finally:
        feed.stop()


def test_a_full_queue_holds_the_reader_back_without_losing_a_message() -> None:
    reader = FakeConsumer([f"m{i}" for i in range(7)])
    feed = CommandFeed(reader, limit=3)
    feed.start()
    try:
        taken: list[Any] = []
        while len(taken) < 7:
            assert _readable(feed.fileno())
            taken.extend(feed.take(100))
        assert taken == [f"m{i}" for i in range(7)]
    finally:
        feed.stop()


def test_a_reader_that_fails_ends_the_thread_and_says_why() -> None:
    reader = FakeConsumer(["m1"], fail_after=True)
    feed = CommandFeed(reader)
    feed.start()
    try:
        assert _readable(feed.fileno())
        feed._thread.join(10)
        assert not feed.alive()
        assert isinstance(feed.failure, RuntimeError)
        assert feed.take(10) == ["m1"]  # what was read before the failure is still handed on
    finally:
        feed.stop()


def test_stop_ends_a_thread_held_back_by_a_full_queue() -> None:
    reader = FakeConsumer([f"m{i}" for i in range(10)])
    feed = CommandFeed(reader, limit=1)
    feed.start()
    assert _readable(feed.fileno())
    feed.stop()
    feed._thread.join(10)  # stop() does not wait out a reader's wait; this one has none
    assert not feed.alive()


def _all(feed: CommandFeed, reader: FakeConsumer) -> list[Any]:
    """What the loop's passes take: those the descriptor wakes, then one more (a position
    wakes nothing: the daemon's next pass, a heartbeat's at the latest, takes it)."""
    assert reader.idle.wait(10)
    taken: list[Any] = []
    while _readable(feed.fileno(), 1.0):
        more = feed.take(100)
        if not more:
            break
        taken.extend(more)
    return taken + feed.take(100)


def test_a_position_alone_does_not_wake_the_loop_and_the_next_pass_takes_it() -> None:
    reader = FakeConsumer([Msg("other", 0), Msg("other", 1)], batch=2)
    feed = CommandFeed(reader, keep=lambda m: m.key() == b"ours")
    feed.start()
    try:
        assert reader.idle.wait(10)  # both skipped and the quiet position queued
        assert not _readable(feed.fileno(), 0.2)
        assert feed.take(100) == [Position(2)]
    finally:
        feed.stop()


def test_other_nodes_commands_are_skipped_and_only_their_position_reaches_the_loop() -> None:
    messages = [Msg("other", 0), Msg("ours", 1), Msg("other", 2), Msg("other", 3),
                Msg("ours", 4), Msg("other", 5), Msg("other", 6)]
    reader = FakeConsumer(messages, batch=3)
    feed = CommandFeed(reader, keep=lambda m: m.key() == b"ours")
    feed.start()
    try:
        taken = _all(feed, reader)
    finally:
        feed.stop()
    # ours in order; a position only after the trailing skipped ones, once the partition is
    # quiet (those before an own command are passed by that command's offset)
    assert [repr(x) if isinstance(x, Msg) else x for x in taken] == [
        "ours@1", "ours@4", Position(7)]


def test_a_long_run_of_skipped_commands_is_told_every_position_every() -> None:
    reader = FakeConsumer([Msg("other", i) for i in range(10)], batch=4)
    feed = CommandFeed(reader, keep=lambda m: m.key() == b"ours", position_every=4)
    feed.start()
    try:
        taken = _all(feed, reader)
    finally:
        feed.stop()
    assert taken == [Position(4), Position(8), Position(10)]


class BatchFillingConsumer:
    """As librdkafka's batch call: ``consume(n, timeout)`` waits until ``n`` messages came or
    the timeout ended; one message is there."""

    def __init__(self) -> None:
        self.waiting = ["m1"]

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        if len(self.waiting) < num_messages and timeout > 0:
            threading.Event().wait(timeout)  # the batch is never filled
        taken, self.waiting = self.waiting[:num_messages], self.waiting[num_messages:]
        return taken


def test_a_lone_command_reaches_the_loop_without_waiting_to_fill_a_batch() -> None:
    feed = CommandFeed(BatchFillingConsumer())
    feed.start()
    try:
        assert _readable(feed.fileno(), 0.25)  # the feed's wait is half a second
        assert feed.take(10) == ["m1"]
    finally:
        feed.stop()


class WaitingConsumer:
    """A reader whose ``consume()`` waits until ``release`` is set, as librdkafka's does for
    its whole timeout: nothing from another thread ends the wait."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.waiting = threading.Event()
        self.closed_by: str | None = None

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        self.waiting.set()
        self.release.wait(30)
        return []

    def close(self) -> None:
        self.closed_by = threading.current_thread().name


def test_stop_does_not_wait_out_the_readers_wait_and_the_thread_closes_the_consumer() -> None:
    reader = WaitingConsumer()
    feed = CommandFeed(reader, on_end=reader.close, name="reader-under-test")
    feed.start()
    assert reader.waiting.wait(10)
    feed.stop()
    assert feed.alive() and reader.closed_by is None  # still in its wait: nothing closed yet
    feed.wake()  # a late wake-up (a signal) writes to no descriptor
    reader.release.set()
    feed._thread.join(10)
    assert not feed.alive()
    assert reader.closed_by == "reader-under-test"


def test_a_thread_that_ended_before_stop_is_closed_by_stop() -> None:
    reader = FakeConsumer(["m1"], fail_after=True)
    closed: list[str] = []
    feed = CommandFeed(reader, on_end=lambda: closed.append(threading.current_thread().name))
    feed.start()
    feed._thread.join(10)
    assert not closed  # the thread ended on its own: the pipe still tells the loop
    assert _readable(feed.fileno())
    feed.stop()
    assert closed == [threading.current_thread().name]
