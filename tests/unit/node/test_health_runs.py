"""Which heartbeats the health agent forwards for their runs (agents.health_runs)."""

from __future__ import annotations

import itertools

import pytest

from agents.health_runs import RECONCILE_FACTOR, RunsForwarding, reconcile_s

STUCK, AGAIN, RECONCILE = 10.0, 10.0, 300.0


def _forwarding() -> RunsForwarding:
    return RunsForwarding(stuck_s=STUCK, again_s=AGAIN, reconcile_s=RECONCILE)


def _beats(rules: RunsForwarding, times: list[float], exited: list[str]) -> list[float]:
    """The times of ``times`` whose heartbeat is forwarded (the agent's loop)."""
    sent = []
    for now in times:
        if rules.due("n1", exited, now):
            rules.forwarded("n1", now)
            sent.append(now)
    return sent


def test_a_node_seen_first_is_remembered_not_forwarded() -> None:
    assert not _forwarding().due("n1", ["r1"], 0.0)


def test_an_exit_answered_within_the_stuck_time_forwards_nothing() -> None:
    rules = _forwarding()
    assert _beats(rules, [0.0, 3.3], []) == []
    assert _beats(rules, [6.6, 9.9, 13.2], ["r1"]) == []  # exited at 6.6, TERMINATE came
    assert _beats(rules, [16.5, 19.8, 40.0], []) == []


def test_a_run_stuck_after_its_exit_is_forwarded_then_every_again_s_while_it_stays() -> None:
    rules = _forwarding()
    times = [i * 3.3 for i in range(20)]  # 0 .. 62.7 s
    sent = _beats(rules, times[:1], []) + _beats(rules, times[1:], ["r1"])
    assert sent[0] == pytest.approx(16.5)  # listed exited from 3.3: stuck from 13.3, next beat
    assert all(b - a >= AGAIN for a, b in itertools.pairwise(sent))
    assert len(sent) >= 4  # enough forwards to reach the shard's 30 s grace


def test_every_node_is_forwarded_at_least_every_reconcile_s() -> None:
    rules = _forwarding()
    times = [i * 3.3 for i in range(300)]  # ~990 s, nothing stuck
    sent = _beats(rules, times, [])
    assert len(sent) == 3
    assert all(RECONCILE <= b - a < RECONCILE + 3.4 for a, b in itertools.pairwise(sent))


def test_forget_makes_every_node_new_again() -> None:
    rules = _forwarding()
    _beats(rules, [0.0, 3.3, 13.4, 30.0], ["r1"])
    rules.forget()
    assert not rules.due("n1", ["r1"], 500.0)


def test_reconcile_s_defaults_to_30_node_timeouts_and_reads_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SLUICE_RUNS_RECONCILE_S", raising=False)
    assert reconcile_s(10.0) == RECONCILE_FACTOR * 10.0 == 300.0
    monkeypatch.setenv("SLUICE_RUNS_RECONCILE_S", "4")
    assert reconcile_s(10.0) == 4.0
    monkeypatch.setenv("SLUICE_RUNS_RECONCILE_S", "soon")
    assert reconcile_s(10.0) == 300.0
