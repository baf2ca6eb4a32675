"""Reading a test system's ledger and dead letters, and producing raw requests."""

from __future__ import annotations

from typing import Any

from schemas import encode
from streams.clients import producer
from streams.ledger import LedgerRecord, read_ledger
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["facts", "produce_raw", "submit_records"]


def facts(settings: Settings, name: str | None = None) -> list[LedgerRecord]:
    """Every committed ledger record (of one type), in (shard, shard_seq) order."""
    records = list(read_ledger(settings.bootstrap, Topics(settings).events))
    records.sort(key=lambda r: (r.record["shard"], r.record["shard_seq"]))
    return [r for r in records if name is None or r.name == name]


def dead_letters(settings: Settings) -> list[LedgerRecord]:
    """Every dead letter so far."""
    return list(read_ledger(settings.bootstrap, Topics(settings).dead_letters))


def produce_raw(settings: Settings, items: list[tuple[bytes, bytes]]) -> None:
    """Produce (key, value) pairs to ``requests`` as they are."""
    out = producer(settings.bootstrap)
    for key, value in items:
        out.produce(Topics(settings).requests, value, key)
    assert out.flush(30) == 0


def submit_records(job_sluid: str, **spec: Any) -> tuple[bytes, bytes]:
    """A SubmitJob as (key, value)."""
    body = {"user": "alice", "command": ["true"], **spec}
    return job_sluid.encode(), encode("SubmitJob", {"job_sluid": job_sluid, "spec": body})
