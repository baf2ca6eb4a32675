"""``sluice audit``'s line for a run's kill: the reason's words, and nothing dangling when a
reason has none (a TERMINATE kill read ``kill of run R: TERMINATE — `` with nothing after the
dash, found 2026-12-07)."""

from __future__ import annotations

from projections.audit import _explain
from projections.views import Views


def test_a_terminate_kill_is_explained() -> None:
    line = _explain("RunKillRequested", {"run_sluid": "sR", "reason": "TERMINATE"}, Views(), None)
    assert line.startswith("kill of run sR: TERMINATE — a node held a run the scheduler")


def test_an_unknown_reason_leaves_no_dash() -> None:
    line = _explain("RunKillRequested", {"run_sluid": "sR", "reason": "WHATEVER"}, Views(), None)
    assert line == "kill of run sR: WHATEVER"
