"""Which shards a worker decides: assigned ones, and not within a session of being fenced."""

from __future__ import annotations

import logging

import pytest

from agents.shard_ownership import Ownership


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_only_assigned_partitions_are_run() -> None:
    ownership = Ownership(10.0, Clock())
    assert ownership.may_run(0, {0, 1})
    assert not ownership.may_run(2, {0, 1})  # revoked: a zombie's buffered records wait


def test_a_fenced_shard_waits_a_session_before_it_opens_again() -> None:
    clock = Clock()
    ownership = Ownership(10.0, clock)
    ownership.fenced(0)
    clock.now += 9.9
    assert not ownership.may_run(0, {0})
    assert ownership.may_run(1, {0, 1})  # the fence is of one shard only
    clock.now += 0.2
    assert ownership.may_run(0, {0})  # still assigned after a session: it was a zombie's fence
    clock.now += 1.0
    assert ownership.may_run(0, {0})


def test_while_the_consumer_cannot_say_only_a_running_shard_goes_on() -> None:
    ownership = Ownership(10.0, Clock())
    assert ownership.may_run(0, None, running=True)
    assert not ownership.may_run(1, None, running=False)


def test_a_new_assignment_lifts_the_wait() -> None:
    clock = Clock()
    ownership = Ownership(10.0, clock)
    ownership.fenced(0)
    ownership.fenced(1)
    ownership.assigned({0})
    assert ownership.may_run(0, {0, 1})
    assert not ownership.may_run(1, {0, 1})


def test_skipping_is_logged_once_and_the_end_of_it_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="agents.shard_ownership")
    ownership = Ownership(10.0, Clock())
    for _ in range(3):
        ownership.may_run(0, set())
    ownership.may_run(0, {0})
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "shard 0: its records are left to its owner: it is not assigned to this worker",
        "shard 0: deciding its records again",
    ]
