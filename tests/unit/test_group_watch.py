"""A worker loop's group consumer left out of its group for good is replaced
(``agents.group_watch``): after a broker stall librdkafka 2.16 can lose every broker it knows
(a metadata answer that listed none) and never look for them again, and the shard consumer
then owned nothing until the worker was restarted. The watch replaces it only once the broker
answers a new client, and a consumer in its group (even with no partition: a standby worker)
is left alone."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from agents.group_watch import GroupWatch, WatchedConsumer
from agents.loop_thread import hinted_consumer
from agents.shard_loop import ShardLoop
from streams.settings import Settings
from tests.unit.fake_kafka import FakeConsumer, FakeMessage
from tests.unit.test_shard_loop import FakeRunner, settings  # noqa: F401 (fixture)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Member:
    def __init__(self, member: str | None) -> None:
        self.member = member

    def memberid(self) -> str | None:
        return self.member


def test_a_consumer_out_of_its_group_past_the_limit_is_replaced_once_the_broker_answers(
) -> None:
    clock, answers = Clock(), [False, True]
    watch = GroupWatch("x", "unused:1", 60, probe=lambda: answers.pop(0), clock=clock)
    reader = Member(None)
    assert not watch.stuck(reader)
    clock.now = 59
    assert not watch.stuck(reader)
    clock.now = 61
    assert not watch.stuck(reader)  # the broker is away: a new consumer would do no better
    clock.now = 100
    assert not watch.stuck(reader)  # probed at most once a limit
    clock.now = 122
    assert watch.stuck(reader)
    assert answers == []


def test_a_member_is_never_replaced_even_without_partitions() -> None:
    clock = Clock()
    watch = GroupWatch("x", "unused:1", 60, probe=lambda: True, clock=clock)
    reader = Member("rdkafka-1")
    for clock.now in (0, 100, 1000):
        assert not watch.stuck(reader)
    reader.member = None  # out (a rebalance after a lost session), then back in time
    clock.now = 1001
    assert not watch.stuck(reader)
    reader.member = "rdkafka-2"
    clock.now = 1100
    assert not watch.stuck(reader)


class Wedged(FakeConsumer):
    """A consumer librdkafka left with no broker: never in its group, nothing assigned."""

    def memberid(self) -> str | None:
        return None

    def poll(self, timeout: float) -> Any:
        self.waits.append(timeout)
        if len(self.waits) > 20:  # never replaced: stop, and fail below
            self.loop.stopping.set()
        return None


def _watch() -> GroupWatch:
    return GroupWatch("shard inbox consumer", "unused:1", 0, probe=lambda: True)


def test_the_shard_loop_s_consumer_left_out_of_its_group_is_replaced(
    settings: Settings, caplog: pytest.LogCaptureFixture,  # noqa: F811 (the fixture)
) -> None:
    made: list[Any] = []

    def make() -> FakeConsumer:
        reader = (Wedged(loop, []) if not made
                  else FakeConsumer(loop, [("assign", [0]), [FakeMessage(0, 7)]]))
        made.append(reader)
        return reader

    loop = ShardLoop(settings, batch_max=100, session_timeout_s=10.0, standby_interval_s=0,
                     make_consumer=lambda: WatchedConsumer(make, _watch()))  # type: ignore
    with caplog.at_level(logging.WARNING, "agents.group_watch"):
        loop.run()
    wedged, fresh = made
    deadline = time.monotonic() + 5
    while not wedged.closed and time.monotonic() < deadline:  # closed on a thread of its
        time.sleep(0.01)                                       # own, not waited for
    assert wedged.closed and fresh.closed
    (runner,) = FakeRunner.opened
    assert runner.batches == [[7]]  # the new consumer's shard is decided again
    assert "out of its group for" in caplog.text and "replacing it" in caplog.text


def test_what_the_replaced_consumer_still_held_is_revoked_first() -> None:
    revoked: list[tuple[Any, list[int]]] = []

    class Holding(Wedged):
        def assignment(self) -> list[Any]:
            return ["p0"]

    class Loop:
        stopping = threading.Event()

    made: list[Any] = []

    def make() -> FakeConsumer:
        made.append(Holding(Loop(), []) if not made else FakeConsumer(Loop(), []))
        return made[-1]

    reader = WatchedConsumer(make, _watch())
    reader.subscribe(["inbox"], on_assign=lambda *_: None,
                     on_revoke=lambda c, parts: revoked.append((c, parts)))
    reader.consume(1, 0.0)  # out of its group since now
    reader.consume(1, 0.0)  # past the limit (0 s), the broker answers: replaced
    assert revoked[0] == (made[0], ["p0"])  # (its close in the background revokes too)
    assert made[1].callbacks["on_revoke"] is not None  # subscribed as the old one was
    assert reader.memberid() == "member-1"  # the new one's, through the wrapper


def test_loops_get_a_watched_consumer() -> None:
    assert isinstance(hinted_consumer("127.0.0.1:9", "t-group", 10.0), WatchedConsumer)
