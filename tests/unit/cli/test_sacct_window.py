"""sacct's window: a start after its end is refused before anything is asked, as sacct's
options.c does (``Start time (…) requested is after end time (…).``, exit 1); the end defaults
to now, or to the start with ``-s`` alone (then there is nothing to refuse)."""

from __future__ import annotations

from typing import Any

import pytest

from cli import history_cmd
from cli.main import main


class _Views:
    asked = 0

    def __init__(self, settings: Any) -> None:
        del settings

    def get(self, path: str) -> dict[str, Any]:
        del path
        _Views.asked += 1
        return {"jobs": []}


@pytest.mark.parametrize("argv", [["-S", "2030-01-01"], ["-S", "now", "-E", "now-1hour"],
                                  ["-S", "2030-01-01", "-E", "2029-12-31", "-s", "R"]])
def test_a_start_after_the_end_is_saccts_error(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(history_cmd, "Client", _Views)
    _Views.asked = 0
    assert main(["history", *argv]) == 1
    out = capsys.readouterr()
    assert out.out == "" and _Views.asked == 0
    assert out.err.startswith("sluice history: error: Start time (")
    assert ") requested is after end time (" in out.err and out.err.endswith(").\n")


@pytest.mark.parametrize("argv", [["-S", "now", "-E", "now"], ["-S", "2030-01-01", "-s", "R"],
                                  ["-S", "now-1hour"]])
def test_a_window_in_order_is_asked(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(history_cmd, "Client", _Views)
    _Views.asked = 0
    assert main(["history", *argv]) == 0
    assert capsys.readouterr().err == "" and _Views.asked == 1
