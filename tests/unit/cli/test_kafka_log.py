"""The CLI's own producer keeps librdkafka's lines instead of printing them (a broker that
cannot be reached made one `sluice submit` print a line every 50 ms for 30 s), and the error a
user sees names the last one."""

from __future__ import annotations

import time

import pytest

from cli.kafka_log import quiet_logger
from streams.clients import request_producer


def test_a_refused_connection_is_remembered_not_printed(capfd: pytest.CaptureFixture[str]
                                                        ) -> None:
    logger, handler = quiet_logger("sluice.test.kafka")
    producer = request_producer("127.0.0.1:9", logger=logger)  # nothing listens on port 9
    producer.produce("t", b"v")
    deadline = time.monotonic() + 10
    while "Connection refused" not in handler.last and time.monotonic() < deadline:
        producer.poll(0.1)
    assert "Connect to ipv4#127.0.0.1:9 failed: Connection refused" in handler.last
    assert "\n" not in handler.last and len(handler.last) <= 300
    out, err = capfd.readouterr()
    assert "Connection refused" not in out + err
    producer.purge()
    producer.flush(0)
