"""A dead letter the broker refuses never stops the consumer that writes it.

Red team (7 Dec 2026): under ``sluice up --secure`` the ``views`` principal had no WRITE on the
dead-letter topic; the first ledger record the views could not read (a fact of a newer worker,
a corrupt record) raised ``Topic authorization failed`` out of the writer and stopped the
views' process, and again at each restart, on the same record."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from streams import dead_letters
from streams.dead_letters import DeadLetterWriter
from streams.kafka_native import KafkaError, KafkaException
from streams.settings import Settings


class _Message:
    def topic(self) -> str:
        return "p.events"

    def partition(self) -> int:
        return 2

    def offset(self) -> int:
        return 7

    def key(self) -> bytes:
        return b"s009M97XV474BP"

    def value(self) -> bytes:
        return b"\xc3\x01" + bytes(8) + b"junk"


class _Refusing:
    made = 0

    def __init__(self) -> None:
        _Refusing.made += 1

    def produce(self, *_args: Any, **_kwargs: Any) -> None:
        raise KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))

    def flush(self, _timeout: float) -> int:
        return 0


def test_a_refused_dead_letter_is_logged_and_the_consumer_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(dead_letters, "producer", lambda *_a, **_k: _Refusing())
    writer = DeadLetterWriter(Settings(home=tmp_path, prefix="p"))
    with caplog.at_level(logging.ERROR, logger="streams.dead_letters"):
        writer.write(_Message(), "Undecodable: unknown fingerprint")
        writer.write(_Message(), "Undecodable: unknown fingerprint")
    assert _Refusing.made == 2  # a failed producer is not kept: the next letter tries anew
    assert any("could not be written" in r.getMessage() and "p.events[2]@7" in r.getMessage()
               for r in caplog.records)
