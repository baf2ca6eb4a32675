"""Views that could not read a fact read it again at their next start
(``ProjectionService.pins``).

A worker upgraded before its views wrote facts of a newer schema: the views dead-lettered them
(``Undecodable: unknown fingerprint``), held every later fact of the shard, and stored their
positions past all of it, so views upgraded and restarted resumed past the missing fact and
the held ones: the shard stayed stuck until ``sluice projections --rebuild``. The stored
positions now stop at the first such record of each partition while facts are held."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from projections.service import ProjectionService
from projections.views import Touched
from schemas import encode
from streams.settings import Settings
from tests.unit.projections.ledger_builder import LedgerBuilder


@dataclass
class Message:
    """What the ledger reader hands the service (a confluent-kafka message's accessors)."""

    part: int
    off: int
    body: bytes

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return self.part

    def offset(self) -> int:
        return self.off

    def value(self) -> bytes:
        return self.body

    def timestamp(self) -> tuple[int, int]:
        return (1, 0)


def ledger() -> list[bytes]:
    builder = LedgerBuilder()
    builder.node("node01")
    job = builder.queued()
    builder.fact("JobPending", job_sluid=job, reason="Priority", priority=1)
    builder.node_state("node01", "MIXED")
    return [encode(name, record) for name, record in builder.facts]


class Letters:
    """The dead letters written (no broker here)."""

    def __init__(self) -> None:
        self.written: list[tuple[int, int, str]] = []

    def write(self, message: Message, reason: str) -> None:
        self.written.append((message.partition(), message.offset(), reason))


def service(home: Path) -> ProjectionService:
    views = ProjectionService(Settings(home=home))
    views._dead_letters = Letters()  # type: ignore[assignment]
    return views


def test_a_fact_the_views_could_not_read_is_read_again_at_the_next_start(tmp_path: Path) -> None:
    values = ledger()
    newer = b"\xc3\x01" + b"\x00" * 8 + b"a fact of a schema these views do not know"
    # partition 0: facts 1, 2, then the unreadable fact 3; partition 1: facts 4, 5 (held)
    first = service(tmp_path)
    first._partitions = 2
    first._apply_batch([Message(0, 0, values[0]), Message(0, 1, values[1]),
                        Message(0, 2, newer), Message(1, 0, values[3]),
                        Message(1, 1, values[4])])
    assert first.views.held  # facts 4 and 5 wait for 3
    first._at_end = {0, 1}  # read to the end: stuck
    first._apply_batch([])
    with first.lock:
        first._commit(Touched())
    first.store.close()

    upgraded = service(tmp_path)  # views as new as the worker: fact 3 now reads
    assert upgraded.positions == {0: 2, 1: 0}
    upgraded._partitions = 2
    upgraded._apply_batch([Message(0, 2, values[2]), Message(1, 0, values[3]),
                           Message(1, 1, values[4])])
    assert not upgraded.views.held
    assert upgraded.views.shard_seq == {"c1": 5}
    upgraded.store.close()


def test_an_unreadable_record_that_leaves_no_gap_does_not_hold_the_positions(
        tmp_path: Path) -> None:
    values = ledger()
    junk = b"not a record at all"
    views = service(tmp_path)
    views._partitions = 1
    views._apply_batch([Message(0, 0, values[0]), Message(0, 1, junk),
                        Message(0, 2, values[1])])
    assert views.pins == {0: 1}  # maybe a fact: kept until the end is read with no gap
    views._at_end = {0}
    views._apply_batch([Message(0, 3, values[2])])  # a record read: not at the end
    assert views.pins == {0: 1}
    views._at_end = {0}
    views._apply_batch([])
    assert views.pins == {}
    with views.lock:
        views._commit(Touched())
    views.store.close()
    assert service(tmp_path).positions == {0: 4}
