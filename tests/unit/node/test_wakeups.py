"""What the node daemon's loop waits for (``agents.node.wakeups``)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from agents.node.wakeups import FALLBACK_POLL_S, Wakeups


@dataclass
class Proc:
    fd: int | None

    def fileno(self) -> int | None:
        return self.fd


def test_the_earliest_deadline_wins_and_none_adds_nothing() -> None:
    wakeups = Wakeups()
    wakeups.at(None)
    assert wakeups.deadline is None
    wakeups.at(12.0)
    wakeups.at(15.0)
    wakeups.at(11.5)
    wakeups.at(None)
    assert wakeups.deadline == 11.5


def test_the_wait_runs_to_the_deadline_never_below_zero_nor_past_the_longest() -> None:
    wakeups = Wakeups()
    assert wakeups.timeout(100.0, 1.0) == 1.0
    wakeups.at(100.25)
    assert wakeups.timeout(100.0, 1.0) == 0.25
    assert wakeups.timeout(101.0, 1.0) == 0.0
    assert wakeups.timeout(99.0, 0.5) == 0.5


def test_a_process_with_a_pidfd_is_waited_on_and_one_without_is_polled() -> None:
    wakeups = Wakeups()
    wakeups.process(Proc(7))
    assert wakeups.fds == {7} and wakeups.deadline is None
    wakeups.process(Proc(None))
    assert wakeups.fds == {7}
    assert wakeups.deadline is not None
    assert wakeups.timeout(wakeups.deadline - FALLBACK_POLL_S, 1.0) == pytest.approx(
        FALLBACK_POLL_S)
