"""The worker's Kafka client logs while the broker is away: one line a minute per kind."""

from __future__ import annotations

import logging

import pytest

from agents.log_repeats import KAFKA_CLIENT_LOGGERS, RepeatFilter, quiet_repeats


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _record(name: str, msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, args, None)


def test_a_repeated_kind_goes_through_once_a_window_with_the_count_held_back() -> None:
    clock = _Clock()
    repeat = RepeatFilter(60.0, clock)
    passed = []
    for step in range(1200):  # two minutes of one error every 100 ms
        clock.now = step / 10
        record = _record("aiokafka", "Unable connect to node with id %s: %s", 1, "refused")
        if repeat.filter(record):
            passed.append(record.getMessage())
    assert passed == [
        "Unable connect to node with id 1: refused",
        "Unable connect to node with id 1: refused (599 more like it in the last 60 s)",
    ]


def test_kinds_are_told_apart_by_logger_and_template() -> None:
    repeat = RepeatFilter(60.0, _Clock())
    assert repeat.filter(_record("aiokafka", "Unable to update metadata from %s", [1]))
    assert repeat.filter(_record("aiokafka.conn", "Unable to update metadata from %s", [1]))
    assert repeat.filter(_record("aiokafka", "Failed fetch messages from %s: %s", 1, "x"))
    assert not repeat.filter(_record("aiokafka", "Unable to update metadata from %s", [2]))


def test_an_outage_s_flood_of_aiokafka_errors_reaches_the_log_as_one_line_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    repeat = quiet_repeats()
    try:
        with caplog.at_level(logging.WARNING):
            for _ in range(500):
                logging.getLogger("aiokafka").error("Unable connect to node with id %s", 1)
                logging.getLogger("aiokafka.consumer.fetcher").error("Failed fetch %s", 1)
            logging.getLogger("sluice.other").warning("health agent is blind")
            logging.getLogger("sluice.other").warning("health agent is blind")
        assert [r.getMessage() for r in caplog.records] == [
            "Unable connect to node with id 1", "Failed fetch 1",
            "health agent is blind", "health agent is blind"]
    finally:
        for name in KAFKA_CLIENT_LOGGERS:
            logging.getLogger(name).removeFilter(repeat)
