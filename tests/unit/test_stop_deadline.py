"""A worker asked to stop ends itself past ``SLUICE_WORKER_STOP_TIMEOUT``
(``agents.stop_deadline``): with the broker stopped, a SIGTERM'd worker was still up 150 s
later, waiting on faust's commits and flushes, until the broker resumed."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agents import stop_deadline
from agents.stop_deadline import DeadlineWorker, arm_stop_deadline


def test_the_deadline_ends_the_process_with_status_1(caplog: pytest.LogCaptureFixture) -> None:
    ended = threading.Event()
    codes: list[int] = []

    def end(code: int) -> None:
        codes.append(code)
        ended.set()

    arm_stop_deadline(0.05, end)
    assert ended.wait(5)
    assert codes == [1]
    assert "has not stopped" in caplog.text


def test_the_first_stop_signal_arms_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    armed: list[float] = []
    monkeypatch.setattr(stop_deadline, "arm_stop_deadline",
                        lambda timeout_s: armed.append(timeout_s) or threading.Thread())
    monkeypatch.setenv("SLUICE_WORKER_STOP_TIMEOUT", "7")
    scheduled: list[Any] = []
    monkeypatch.setattr(stop_deadline.Worker, "_schedule_shutdown",
                        lambda self, signal: scheduled.append(signal))
    worker = DeadlineWorker.__new__(DeadlineWorker)  # no app: only the signal path is used
    worker._schedule_shutdown("SIGTERM")
    worker._schedule_shutdown("SIGINT")
    assert armed == [7.0]
    assert scheduled == ["SIGTERM", "SIGINT"]
