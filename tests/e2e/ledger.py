"""Reading a test system's ledger and dead letters, and producing raw requests."""

from __future__ import annotations

import os
import pwd
import tempfile
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

from schemas import encode
from streams.clients import producer
from streams.ledger import LedgerRecord, read_ledger
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["TEST_USER", "assert_exactly_once", "facts", "job_workdir", "produce_raw",
           "submit_records"]

TEST_USER = pwd.getpwuid(os.getuid()).pw_name
"""The owner of the test jobs: node daemons run a job as its owner, so the user running the
tests (root here: the harness's nodes allow root jobs) owns the jobs it submits."""


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


def job_workdir() -> str:
    """A working directory for test jobs (the intake refuses a submission without one)."""
    path = Path(tempfile.gettempdir()) / "sluice-test-jobs"
    path.mkdir(exist_ok=True)
    return str(path)


def submit_records(job_sluid: str, **spec: Any) -> tuple[bytes, bytes]:
    """A SubmitJob as (key, value)."""
    body = {"user": TEST_USER, "command": ["true"], "workdir": job_workdir(), **spec}
    return job_sluid.encode(), encode("SubmitJob", {"job_sluid": job_sluid, "spec": body})


def assert_exactly_once(ledger: list[LedgerRecord], sluids: Collection[str]) -> int:
    """The ledger's guarantees after a failure: a gapless shard sequence, every accepted
    submission queued and started exactly once, and no node allocated to two runs at once
    (allocations folded in shard order). The number of node allocations made."""
    seqs = [r.record["shard_seq"] for r in ledger]
    assert seqs == list(range(1, len(seqs) + 1)), "the shard sequence has a gap or a duplicate"
    queued = Counter(r.record["job_sluid"] for r in ledger if r.name == "JobQueued")
    assert set(queued) == set(sluids), "an accepted submission was lost"
    assert set(queued.values()) == {1}, "a submission was queued twice"
    started = Counter(r.record["job_sluid"] for r in ledger if r.name == "JobStarted")
    assert set(started.values()) == {1}, "a job was started twice"
    holder: dict[str, str] = {}
    allocations = 0
    for record in ledger:
        body = record.record
        if record.name == "JobStarted":
            for node in body["nodes"]:
                assert node not in holder, f"{node} allocated to two runs at once"
                holder[node] = body["run_sluid"]
                allocations += 1
        elif record.name == "JobEnded":
            for node in [n for n, run in holder.items() if run == body["run_sluid"]]:
                del holder[node]
    return allocations
