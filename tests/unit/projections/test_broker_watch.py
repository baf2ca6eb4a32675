"""The views' ledger reader cut off from the broker: said in /v1/status and by sluice status."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException

from cli.status import status_lines
from projections.broker_watch import PROBE_S, REBUILD_S, RECHECK_S, BrokerWatch

T0 = 1_700_000_000.0


class _Clocks:
    def __init__(self) -> None:
        self.wall, self.mono = T0, 100.0

    def pass_s(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


class _Reader:
    def __init__(self) -> None:
        self.answers = False
        self.asked = 0

    def list_topics(self, topic: str, timeout: float) -> Any:
        self.asked += 1
        if not self.answers:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))
        return {topic: timeout}


def _watch() -> tuple[BrokerWatch, _Clocks]:
    clocks = _Clocks()
    return BrokerWatch(lambda: clocks.wall, lambda: clocks.mono), clocks


def test_all_brokers_down_starts_a_spell_that_the_broker_s_first_answer_ends() -> None:
    watch, clocks = _watch()
    reader = _Reader()
    watch.check(reader, "ledger")
    assert reader.asked == 0  # no spell: no request
    watch.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    assert watch.since_ms == int(T0 * 1000)
    clocks.pass_s(5)
    watch.on_error(KafkaError(KafkaError._TRANSPORT))
    assert watch.since_ms == int(T0 * 1000)  # the spell's start is kept
    watch.check(reader, "ledger")
    watch.check(reader, "ledger")  # at most one request per RECHECK_S
    assert reader.asked == 1 and watch.since_ms
    reader.answers = True
    clocks.pass_s(RECHECK_S)
    watch.check(reader, "ledger")
    assert watch.since_ms == 0


def test_a_record_ends_a_spell_and_other_errors_start_none() -> None:
    watch, _ = _watch()
    watch.on_error(KafkaError(KafkaError._MSG_TIMED_OUT))
    assert watch.since_ms == 0
    watch.on_error(KafkaError(KafkaError._TRANSPORT))
    watch.heard()
    assert watch.since_ms == 0


def test_sluice_status_says_the_views_are_cut_off_not_caught_up_and_fails() -> None:
    fresh = {"caught_up": True, "lag_records": 0, "last_fact_ms": int(T0 * 1000),
             "shard_seq": {"a": 7}, "cycle_ms": {"a": int(T0 * 1000)}, "cycle_age_s": {"a": 2.0},
             "broker_unreachable_since_ms": int(T0 * 1000)}
    lines, stalled = status_lines(fresh)
    assert stalled
    assert lines[0].startswith("views: CUT OFF from the broker since 2023-11-14T22:13:20Z")
    assert status_lines({**fresh, "broker_unreachable_since_ms": 0}) == (
        ["views: caught up; newest fact 2023-11-14T22:13:20Z",
         "shard a: seq 7, cycle at 2023-11-14T22:13:20Z, last cycle 2.0 s ago"], False)


def test_a_stalled_broker_starts_a_spell_after_two_unanswered_probes() -> None:
    """A SIGSTOPped broker refuses nothing: librdkafka's requests to it time out only after a
    minute, and sluice status said 'caught up' all that time (reliability round, 3-minute
    SIGSTOP). The probe's own client says it within two probes."""
    watch, clocks = _watch()
    watch.probed(False)
    assert watch.since_ms == 0  # one slow answer on a busy host is no stall
    clocks.pass_s(PROBE_S)
    watch.probed(False)
    assert watch.since_ms == int((T0 + PROBE_S) * 1000)
    reader = _Reader()
    reader.answers = True
    clocks.pass_s(RECHECK_S)
    watch.check(reader, "ledger")  # the reader's own answer ends it, not the probe's
    assert watch.since_ms == 0


def test_a_reader_cut_off_while_the_probe_is_answered_is_replaced_once() -> None:
    """librdkafka 2.16 can forget every broker after a stall (confluentinc/librdkafka#5301):
    the reader's spell never ends although the broker answers a new client."""
    watch, clocks = _watch()
    watch.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    for _ in range(int(REBUILD_S / PROBE_S)):
        assert not watch.reader_cut_off()
        watch.probed(True)
        clocks.pass_s(PROBE_S)
    assert watch.reader_cut_off()
    assert not watch.reader_cut_off()  # the spell restarts with the new reader


def test_a_reader_is_not_replaced_when_the_broker_comes_back_after_a_long_outage() -> None:
    watch, clocks = _watch()
    watch.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    for _ in range(60):  # five minutes away: nobody answers
        watch.probed(False)
        clocks.pass_s(PROBE_S)
    watch.probed(True)  # back: the probe may answer before the reader's own check does
    assert not watch.reader_cut_off()
