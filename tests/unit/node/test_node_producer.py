"""A node daemon's producer cannot fail for good (``streams.clients.node_producer``).

An idempotent librdkafka producer that meets a fatal error refuses every later send: the
daemon's heartbeats would stop and its node be declared DOWN for as long as it lived. The
daemon's producer is not idempotent, keeps one request in flight (its records stay in order
across retries) and still waits for every replica (``acks=all``)."""

from __future__ import annotations

from typing import Any

import pytest

from agents.node import daemon
from streams import clients


def test_the_daemon_builds_its_producer_with_node_producer() -> None:
    assert daemon.node_producer is clients.node_producer


def test_node_producer_is_not_idempotent_and_keeps_order(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[dict[str, Any]] = []
    monkeypatch.setattr(clients, "Producer", lambda config: built.append(config) or config)

    clients.node_producer("127.0.0.1:9")

    [config] = built
    assert config["enable.idempotence"] is False
    assert config["max.in.flight.requests.per.connection"] == 1
    assert (config["acks"], config["partitioner"]) == ("all", "murmur2_random")
