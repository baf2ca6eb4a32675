"""Every consumer Sluice makes bounds what it fetches ahead (``streams.clients._BOUNDED_PREFETCH``).

Red team, 7 Dec 2026: librdkafka inflates a gzip batch whole and without bound (a 1 MiB batch:
a ~1 GB record). At librdkafka's defaults one fetch answer carried a batch of each partition,
up to 50 MB: six 1 MiB bombs waiting, one a partition, took 6,964 MiB of a plain reader
(``benchmarks/bench_gzip_bombs.py``, docs/benchmarks.md), 2,005 MiB with these settings.
"""

from __future__ import annotations

from typing import Any

import pytest

from streams import clients

BROKER_MESSAGE_MAX_BYTES = 1_048_588
"""Kafka's default ``message.max.bytes`` (the bundled broker's and ``sluice up``'s)."""


@pytest.fixture
def configs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = []
    monkeypatch.setattr(clients, "Consumer", lambda config: made.append(config) or config)
    return made


def test_a_fetch_answer_holds_one_batch_of_the_largest_and_the_queue_stops_fetching_early(
        configs: list[dict[str, Any]]) -> None:
    clients.consumer("b:1")
    clients.consumer("b:1", group="g", overrides={"session.timeout.ms": 10_000})
    for config in configs:
        # one largest batch an answer (never less: a legitimate batch that large would stall)
        assert config["fetch.max.bytes"] == BROKER_MESSAGE_MAX_BYTES
        assert config["max.partition.fetch.bytes"] >= BROKER_MESSAGE_MAX_BYTES
        # no new fetch while a few MiB (inflated) wait: one bomb is over it at once
        assert config["queued.max.messages.kbytes"] <= 8192
        # and no second of stall each time a long ledger's reader fills its queue
        assert config["fetch.queue.backoff.ms"] <= 50
