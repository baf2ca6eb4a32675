"""The health agent's clock-ahead rules (agents.health_clock) and what the agent sends for them
(agents.health), on times the test passes in; and that only the health agent's seal lets a
``NodeClockAhead`` through the shard inbox (agents.inbox_records)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agents.auth.seal import SealChecker, seal_headers
from agents.health_clock import Ahead, ClockAheadWatch, clock_ahead_beats
from agents.health_store import HealthStore
from agents.inbox_records import open_inbox_record
from agents.shard_runner import InboxRecord
from scheduler.records import NodeClockAhead
from schemas import encode
from tests.unit.node.test_health_agent import START_MS, agent_on, beat

TTL_MS = 300_000
NOW = START_MS


def _beats(watch: ClockAheadWatch, node: str, aheads_ms: list[int]) -> list[Ahead]:
    return [watch.heard(node, NOW + i * 1000 + a, NOW + i * 1000)
            for i, a in enumerate(aheads_ms)]


def test_three_heartbeats_in_a_row_ahead_by_more_than_the_ttl_report_once() -> None:
    watch = ClockAheadWatch(TTL_MS, 3)
    got = _beats(watch, "a", [400_000, 401_000, 399_000, 400_000, 400_000])
    assert got == [Ahead.NOTHING, Ahead.NOTHING, Ahead.REPORT, Ahead.NOTHING, Ahead.NOTHING]
    assert watch.least_ahead_ms("a") == 399_000


def test_the_threshold_is_strictly_more_than_the_ttl() -> None:
    watch = ClockAheadWatch(TTL_MS, 3)
    assert Ahead.REPORT not in _beats(watch, "a", [TTL_MS] * 5)  # warned, never reported
    assert Ahead.REPORT in _beats(ClockAheadWatch(TTL_MS, 3), "a", [TTL_MS + 1] * 3)


def test_one_odd_heartbeat_or_two_cannot_report() -> None:
    watch = ClockAheadWatch(TTL_MS, 3)
    got = _beats(watch, "a", [400_000, 0, 400_000, 400_000, 10, 400_000, 400_000])
    assert Ahead.REPORT not in got
    assert Ahead.REPORT in _beats(watch, "a", [400_000])  # the third in a row


def test_a_new_episode_reports_again_after_the_clock_was_fixed() -> None:
    watch = ClockAheadWatch(TTL_MS, 3)
    first = _beats(watch, "a", [400_000] * 4)
    fixed = _beats(watch, "a", [20])
    again = _beats(watch, "a", [500_000] * 3)
    assert (first.count(Ahead.REPORT), fixed, again[-1]) == (1, [Ahead.NOTHING], Ahead.REPORT)
    assert watch.least_ahead_ms("a") == 500_000


def test_more_than_half_the_ttl_warns_once_per_episode_and_never_reports() -> None:
    watch = ClockAheadWatch(TTL_MS, 3)
    got = _beats(watch, "a", [200_000] * 6)
    assert got == [Ahead.NOTHING, Ahead.NOTHING, Ahead.WARN] + [Ahead.NOTHING] * 3
    # then past the TTL: reported (the half episode went on)
    assert _beats(watch, "a", [350_000] * 3)[-1] is Ahead.REPORT
    # back under the TTL but over half: the report's episode ends, the warning's does not
    assert _beats(watch, "a", [200_000] * 4) == [Ahead.NOTHING] * 4
    assert _beats(watch, "a", [350_000] * 3)[-1] is Ahead.REPORT


def test_a_clock_behind_or_on_time_does_nothing_and_keeps_nothing() -> None:
    watch = ClockAheadWatch(TTL_MS, 3)
    assert set(_beats(watch, "a", [-400_000] * 5 + [0] * 5 + [150_000] * 5)) == {Ahead.NOTHING}
    assert watch.least_ahead_ms("a") == 0 and not watch._nodes


def test_nodes_are_counted_apart_and_forget_starts_every_streak_again() -> None:
    watch = ClockAheadWatch(TTL_MS, 3)
    _beats(watch, "a", [400_000] * 2)
    assert _beats(watch, "b", [400_000]) == [Ahead.NOTHING]
    watch.forget()
    assert _beats(watch, "a", [400_000] * 3)[-1] is Ahead.REPORT


def test_zero_beats_never_reports_but_still_warns() -> None:
    watch = ClockAheadWatch(TTL_MS, 0)
    got = _beats(watch, "a", [400_000] * 5)
    assert Ahead.REPORT not in got and got.count(Ahead.WARN) == 1


@pytest.mark.parametrize(("text", "beats"), [("", 3), ("5", 5), ("0", 0), ("-1", 3), ("x", 3)])
def test_the_beats_setting(monkeypatch: pytest.MonkeyPatch, text: str, beats: int) -> None:
    monkeypatch.setenv("SLUICE_CLOCK_AHEAD_BEATS", text)
    assert clock_ahead_beats() == beats


def test_the_agent_sends_node_clock_ahead_once_and_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    agent, sent = agent_on(HealthStore(tmp_path / "health.db"))
    caplog.set_level(logging.WARNING, "agents.health")
    for i in range(5):
        now = START_MS + i * 1000
        agent.heard(beat("a", now + 400_000 + i), 0, now)
        agent.heard(beat("b", now - 400_000), 1, now)  # behind: not this rule's
    clock = [(kind, name, record) for kind, name, record in sent.records
             if kind == "NodeClockAhead"]
    assert clock == [("NodeClockAhead", "name-a", {
        "node_sluid": "a", "name": "name-a", "ahead_ms": 400_000, "time_ms": START_MS + 2000})]
    NodeClockAhead(**clock[0][2])  # the record the shard decides
    assert sum("reporting it to be drained" in r.getMessage() for r in caplog.records) == 1


def test_the_agent_warns_once_for_a_node_ahead_by_more_than_half_the_ttl(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    agent, sent = agent_on(HealthStore(tmp_path / "health.db"))
    caplog.set_level(logging.WARNING, "agents.health")
    for i in range(6):
        now = START_MS + i * 1000
        agent.heard(beat("a", now + 200_000), 0, now)
    assert [k for k, _, _ in sent.records if k == "NodeClockAhead"] == []
    assert sum("more than half of CommandTTL" in r.getMessage() for r in caplog.records) == 1


def _inbox(origin: str) -> InboxRecord:
    secret = b"s" * 32
    value = encode("NodeClockAhead", {"node_sluid": "a", "name": "n1", "ahead_ms": 400_000,
                                      "time_ms": NOW})
    return InboxRecord(offset=0, timestamp_ms=NOW, value=value,
                       headers=tuple(seal_headers(secret, origin, NOW, value)))


def test_only_the_health_agents_seal_lets_it_through_the_inbox() -> None:
    secret = b"s" * 32
    opened = open_inbox_record(_inbox("health"), secret, SealChecker(), NOW)
    assert opened == (NodeClockAhead(node_sluid="a", name="n1", ahead_ms=400_000,
                                     time_ms=NOW), NOW)
    refused = open_inbox_record(_inbox("intake"), secret, SealChecker(), NOW)
    assert refused == "a NodeClockAhead from intake; only the health sends it"
