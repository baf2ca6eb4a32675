"""The node daemon's command reader thread (``agents.node.command_feed``) with a fake consumer."""

from __future__ import annotations

import select
import threading
from typing import Any

from agents.node.command_feed import CommandFeed


class FakeConsumer:
    """Hands out ``messages`` one per poll, then waits (as a consumer with nothing new)."""

    def __init__(self, messages: list[Any], fail_after: bool = False) -> None:
        self.messages = list(messages)
        self.fail_after = fail_after
        self.idle = threading.Event()  # set once every message was handed out
        self.threads: set[str] = set()

    def poll(self, timeout: float = -1) -> Any:
        self.threads.add(threading.current_thread().name)
        if self.messages:
            return self.messages.pop(0)
        if self.fail_after:
            raise RuntimeError("broker gone")
        self.idle.set()
        threading.Event().wait(min(timeout, 0.05))
        return None


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
    assert not feed.alive()
