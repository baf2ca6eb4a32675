"""``sluice replay``'s read in a child process and its fold as the facts come
(projections.replay_stream, projections.merge_stream): the facts and rows of the plain
``read_facts`` + ``views_at``, whatever order and batches the partitions give the facts in."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from projections.merge_stream import MergeStream
from projections.replay import Batch, Fact, LedgerGapError, merge, views_at
from projections.replay_stream import fold_stream, read_in_child
from tests.unit.projections.test_replay_fold import decoded, every_fact_type, state_of

START_MS = 1_767_225_600_000


def as_read(facts: list[Fact], partitions: int, seed: int) -> list[Fact]:
    """``facts`` as a read of ``partitions`` partitions gives them: each partition's facts in
    the order written, the partitions interleaved in runs of random length."""
    placed: list[list[Fact]] = [[] for _ in range(partitions)]
    rng = random.Random(seed)
    for offset, fact in enumerate(facts):
        p = rng.randrange(partitions)
        placed[p].append(Fact(fact.name, fact.record, p, offset))
    read: list[Fact] = []
    while any(placed):
        p = rng.choice([n for n, items in enumerate(placed) if items])
        run = rng.randint(1, 40)
        read.extend(placed[p][:run])
        del placed[p][:run]
    return read


def batches_of(facts: list[Fact], seed: int, largest: int = 60) -> Iterator[Batch]:
    rng = random.Random(seed)
    at = 0
    while at < len(facts):
        size = rng.randint(1, largest)
        yield [(f.name, f.record, f.partition, f.offset) for f in facts[at:at + size]]
        at += size


def ledger(*shards: str, gap_ms: int = 300) -> list[Fact]:
    """Every fact type on each shard, the shards' clocks ``gap_ms`` apart, in shard order."""
    built = [every_fact_type(shard, START_MS + n * gap_ms) for n, shard in enumerate(shards)]
    return decoded([Fact(name, record, 0, 0) for b in built for name, record in b.facts])


def expected(facts: list[Fact], at_ms: int | None = None) -> dict[str, object]:
    return state_of(views_at(facts, at_ms))


@pytest.mark.parametrize("shards", [("a",), ("a", "b"), ("a", "b", "c")])
@pytest.mark.parametrize("seed", range(6))
def test_fold_stream_gives_the_facts_and_rows_of_views_at(shards: tuple[str, ...],
                                                           seed: int) -> None:
    facts = as_read(ledger(*shards), partitions=3, seed=seed)

    read, views = fold_stream(batches_of(facts, seed))

    assert read == facts
    assert state_of(views) == expected(facts)


@pytest.mark.parametrize("seed", range(4))
def test_fold_stream_at_a_time_gives_the_rows_of_views_at_then(seed: int) -> None:
    facts = as_read(ledger("a", "b"), partitions=3, seed=seed)
    at_ms = sorted(f.time_ms for f in facts)[len(facts) // 2]

    read, views = fold_stream(batches_of(facts, seed), at_ms=at_ms)

    assert read == facts
    assert state_of(views) == expected(facts, at_ms)


def test_a_shard_first_seen_late_is_folded_again_in_merge_order() -> None:
    """Shard b's facts are all read after shard a's were folded, and b's clock is earlier: the
    stream's order is not merge's, and the views are folded again the plain way."""
    a, b = ledger("a", gap_ms=0), ledger("b", gap_ms=0)
    for n, fact in enumerate(b):
        fact.record["time_ms"] = START_MS - 10_000 + n
    facts = as_read(a, 2, seed=1) + as_read(b, 2, seed=2)
    stream = MergeStream()
    handed = [f for batch in batches_of(facts, 3, largest=5) for f in stream.add(batch)]
    assert stream.late and handed != list(merge(facts))[:len(handed)]

    read, views = fold_stream(batches_of(facts, 3, largest=5))

    assert read == facts
    assert state_of(views) == expected(facts)


def test_merge_stream_hands_on_merge_order_as_soon_as_each_shard_has_its_next_fact() -> None:
    shuffled = as_read(ledger("a", "b"), partitions=4, seed=5)
    order = list(merge(shuffled))
    stream = MergeStream()
    handed: list[Fact] = []
    for batch in batches_of(shuffled, 5):
        handed.extend(stream.add(batch))
        assert handed == order[:len(handed)]
    handed.extend(stream.finish())

    assert handed == order and stream.handed == len(order) and not stream.late


@pytest.mark.parametrize(("at_ms", "drop", "twice"), [
    (None, 5, None), (None, None, 5), (START_MS, 30, None), (START_MS, None, 30)])
def test_a_gap_or_a_duplicate_is_refused_as_views_at_refuses_it(
        at_ms: int | None, drop: int | None, twice: int | None) -> None:
    """A gap or a duplicate raises ``LedgerGapError``, also after the fold stopped at a time."""
    facts = ledger("a")
    if drop is not None:
        del facts[drop]
    if twice is not None:
        facts.append(facts[twice])
    with pytest.raises(LedgerGapError):
        views_at(facts, at_ms)

    with pytest.raises(LedgerGapError):
        fold_stream(batches_of(as_read(facts, 2, seed=4), 4), at_ms=at_ms)


@pytest.mark.parametrize("memfd", [True, False], ids=["memfd", "temporary-file"])
def test_read_in_child_hands_on_every_batch_the_source_gives(
        memfd: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not memfd:  # a system without memfd_create: the spool is an unlinked temporary file
        monkeypatch.delattr(os, "memfd_create", raising=False)
    facts = ledger("a", "b")
    sent = list(batches_of(facts, 7))
    odd = [("JobPending", {"shard": "x", "shard_seq": 1, "cost": Decimal("1.5")}, 0, 0)]

    got = list(read_in_child(lambda: iter([*sent, odd])))  # the last one pickled

    assert got == [*sent, odd]


def test_a_failure_of_the_child_is_raised_here() -> None:
    def failing() -> Iterator[Batch]:
        yield [("JobPending", {"shard": "a", "shard_seq": 1, "time_ms": 0}, 0, 0)]
        raise LedgerGapError("broken by the test")

    got: list[Batch] = []
    with pytest.raises(LedgerGapError, match="broken by the test"):
        got.extend(read_in_child(failing))
    assert len(got) == 1


def test_the_replay_command_imports_nothing_that_starts_a_thread() -> None:
    """``sluice replay`` forks its reader only from a process that runs one thread."""
    code = ("import cli.main, cli.client, cli.replay\n"
            "from projections.replay_stream import can_fork\n"
            "print(can_fork())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[3], timeout=60)
    assert done.stdout.strip() == "True", done.stderr


def test_what_was_written_before_the_fork_is_written_once() -> None:
    """The child flushes the standard streams it inherited on its way out: they are flushed
    before it is forked (``multiprocessing`` does), so what was written before is written once."""
    code = ("import sys\n"
            "from projections.replay_stream import read_in_child\n"
            "sys.stdout.write('before')\n"
            "got = list(read_in_child(lambda: iter([[('JobPending', {}, 0, 0)]])))\n"
            "print('|after', len(got))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[3], timeout=60)
    assert done.stdout == "before|after 1\n", done.stderr
