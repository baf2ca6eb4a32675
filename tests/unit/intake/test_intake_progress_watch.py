"""The intake's progress consumers cut off for good are replaced (``agents.intake_progress``).

After a broker stall librdkafka 2.16 can forget every broker and never look again
(confluentinc/librdkafka#5301). The progress group's committer so cut off failed every commit
(after 45 s each: the intake handled one batch every 45 s, and its progress never moved on)
and every load (a partition assigned again was never read: the intake retried the load for
ever). Both consumers are now replaced once their calls have failed for the watch's limit while
the broker answers a new client; a broker that is away replaces nothing."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from agents.group_watch import GroupWatch
from agents.intake_progress import IntakeProgress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Dead:
    """A consumer librdkafka has cut off: no coordinator, ever."""

    closed = False

    def commit(self, **_: Any) -> None:
        raise KafkaException(KafkaError(KafkaError._WAIT_COORD, "Waiting for coordinator"))

    def committed(self, *_: Any, **__: Any) -> Any:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Timed out"))

    def close(self) -> None:
        self.closed = True


class Alive:
    """A group with offset 7 committed for every partition."""

    def __init__(self) -> None:
        self.commits: list[list[tuple[int, int]]] = []

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        assert not asynchronous
        self.commits.append([(tp.partition, tp.offset) for tp in offsets])

    def committed(self, tps: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, 7) for tp in tps]

    def close(self) -> None:
        pass


def progress(answers: list[bool]) -> tuple[IntakeProgress, Clock, list[Any]]:
    clock, made = Clock(), []

    def make(_group: str) -> Any:
        made.append(Dead() if len(made) < 2 else Alive())
        return made[-1]

    watch = GroupWatch("progress", "unused:1", 60, probe=lambda: answers.pop(0), clock=clock,
                       symptom="its commits failing")
    return IntakeProgress("unused:1", "requests", "g", "w", make=make, watch=watch), clock, made


def test_a_cut_off_committer_is_replaced_and_the_progress_loads_again() -> None:
    tracker, clock, made = progress([True])
    with pytest.raises(KafkaException):
        tracker.expected(0)
    clock.now = 61
    with pytest.raises(KafkaException):  # out past the limit, the broker answers: replaced
        tracker.expected(0)
    assert len(made) == 4 and made[0].closed and made[1].closed
    assert tracker.expected(0) == 7  # before, the intake asked the dead one for ever


def test_failed_commits_replace_the_committer_and_the_next_commit_goes_through() -> None:
    tracker, clock, made = progress([True])
    for at in (0, 30, 61):
        clock.now = at
        with pytest.raises(KafkaException):
            tracker.done({0: 10})
    assert len(made) == 4
    tracker.done({0: 11})
    assert made[2].commits == [[(0, 11)]]
    assert tracker.cached(0) == 11


def test_nothing_is_replaced_while_the_broker_is_away() -> None:
    tracker, clock, made = progress([False, False])
    for at in (0, 61, 100, 122):
        clock.now = at
        with pytest.raises(KafkaException):
            tracker.done({0: 10})
    assert len(made) == 2  # probed at 61 and 122, unanswered both times
