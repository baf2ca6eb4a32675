"""Long work shows a progress bar with its rate and ETA on a terminal, nothing elsewhere."""

from __future__ import annotations

import io
import sys
import threading

import pytest

from cli.progress import progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_bar_shows_count_rate_and_eta(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    with progress(40, "verify", "cycle") as advance:
        for _ in range(40):
            advance(1)
    shown = screen.getvalue()  # tqdm's line: "verify: 0%| | 0/40 [00:00<?, ?cycle/s]"
    assert "verify:" in shown and "/40 [" in shown and "cycle/s]" in shown
    assert "<" in shown.split("/40 [")[1]  # elapsed<remaining: the ETA
    assert shown.endswith("\r")  # the bar is cleared at the end (leave=False)


@pytest.mark.parametrize("tty", [False, True])
def test_off_a_terminal_or_with_json_nothing_is_printed(
    monkeypatch: pytest.MonkeyPatch, tty: bool
) -> None:
    screen = Terminal() if tty else io.StringIO()
    monkeypatch.setattr(sys, "stderr", screen)
    with progress(10, "simulate", "event", quiet=tty) as advance:
        advance(10)
    assert screen.getvalue() == ""


def test_without_its_monitor_the_bar_runs_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sluice replay`` forks its reader only from a process of one thread: its bar starts no
    tqdm monitor thread, which a bar starts by default."""
    monkeypatch.setattr(sys, "stderr", Terminal())

    def started(monitor: bool) -> list[threading.Thread]:
        before = set(threading.enumerate())
        with progress(None, "replay", "fact", monitor=monitor) as advance:
            advance(1000)
            return [t for t in threading.enumerate() if t not in before]

    assert started(monitor=False) == []
    assert [type(t).__name__ for t in started(monitor=True)] == ["TMonitor"]
