"""``streams.admin.BrokerProbe`` against a real broker: one client kept while it is answered,
a new one after a probe left unanswered."""

from __future__ import annotations

import socket

from streams.admin import BrokerProbe


def test_a_probe_keeps_its_client_while_the_broker_answers(kafka_bootstrap: str) -> None:
    probe = BrokerProbe(kafka_bootstrap)
    assert probe(10.0)
    client = probe._client
    assert client is not None
    assert probe(10.0) and probe(10.0)
    assert probe._client is client  # no new client (no new TLS handshake) a probe


def test_an_unanswered_probe_drops_its_client() -> None:
    with socket.socket() as held:  # a port nobody answers on: bound, never listening
        held.bind(("127.0.0.1", 0))
        probe = BrokerProbe(f"127.0.0.1:{held.getsockname()[1]}")
        assert not probe(1.0)
        assert probe._client is None
        assert not probe(1.0)
