"""The shard reads every inbox offset a batch skips over, not only those before its first."""

from __future__ import annotations

from agents.shard_runner import InboxRecord, with_gaps


class Inbox:
    """The partition as the gap reader sees it: every offset holds a record."""

    def __init__(self) -> None:
        self.reads: list[tuple[int, int]] = []

    def __call__(self, first: int, end: int) -> list[InboxRecord]:
        self.reads.append((first, end))
        return [InboxRecord(at, 1, b"read") for at in range(first, end)]


def offsets(records: list[InboxRecord]) -> list[int]:
    return [r.offset for r in records]


def test_a_gap_inside_the_batch_is_read_like_one_before_it() -> None:
    inbox = Inbox()
    batch = [InboxRecord(at, 1, b"x") for at in (12, 13, 17, 18, 21)]
    assert offsets(with_gaps(9, batch, inbox)) == list(range(10, 22))
    assert inbox.reads == [(10, 12), (14, 17), (19, 21)]


def test_a_contiguous_batch_reads_nothing() -> None:
    inbox = Inbox()
    batch = [InboxRecord(at, 1, b"x") for at in (10, 11, 12)]
    assert offsets(with_gaps(9, batch, inbox)) == [10, 11, 12]
    assert inbox.reads == []


def test_the_offsets_inside_an_unreadable_batch_are_not_read_again() -> None:
    inbox = Inbox()
    batch = [InboxRecord(10, 1, b"x"), InboxRecord(11, 0, b"", last=40), InboxRecord(43, 1, b"x")]
    assert offsets(with_gaps(9, batch, inbox)) == [10, 11, 41, 42, 43]
    assert inbox.reads == [(41, 43)]


def test_records_at_or_below_done_are_dropped_and_read_nothing() -> None:
    inbox = Inbox()
    batch = [InboxRecord(at, 1, b"x") for at in (7, 8, 9)]
    assert with_gaps(9, batch, inbox) == []
    assert inbox.reads == []
