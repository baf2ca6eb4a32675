"""What a batch is missing and what it repeats, against the offset the agent expects."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agents.offset_gaps import Gap, Take, plan_partition


def test_a_batch_that_starts_where_expected_is_taken_whole() -> None:
    plan = plan_partition(5, [(5, 5), (6, 6), (7, 7)])
    assert plan.steps == (Take(0), Take(1), Take(2))
    assert (plan.next_offset, plan.dropped) == (8, 0)


def test_a_batch_that_starts_past_it_reads_the_skipped_offsets_first() -> None:
    plan = plan_partition(5, [(8, 8), (9, 9)])
    assert plan.steps == (Gap(5, 8), Take(0), Take(1))
    assert plan.next_offset == 10


def test_records_below_it_were_handled_before_and_are_dropped() -> None:
    plan = plan_partition(7, [(5, 5), (6, 6), (7, 7)])
    assert plan.steps == (Take(2),)
    assert (plan.next_offset, plan.dropped) == (8, 2)


def test_a_hole_inside_a_batch_is_a_gap_too() -> None:
    plan = plan_partition(0, [(0, 0), (3, 3)])
    assert plan.steps == (Take(0), Gap(1, 3), Take(1))


def test_an_unreadable_batch_marker_covers_its_whole_span() -> None:
    plan = plan_partition(10, [(10, 14), (15, 15)])
    assert plan.steps == (Take(0), Take(1))
    assert plan.next_offset == 16
    assert plan_partition(16, [(10, 14)]).steps == ()


@given(st.integers(0, 50), st.lists(st.integers(0, 100), max_size=30, unique=True))
def test_every_offset_from_expected_to_the_last_is_read_or_taken_exactly_once(
    expected: int, offsets: list[int],
) -> None:
    offsets.sort()
    plan = plan_partition(expected, [(o, o) for o in offsets])
    covered: list[int] = []
    for step in plan.steps:
        if isinstance(step, Gap):
            covered.extend(range(step.first, step.end))
        else:
            covered.append(offsets[step.index])
    new = [o for o in offsets if o >= expected]
    assert covered == list(range(expected, new[-1] + 1)) if new else covered == []
    assert plan.next_offset == (new[-1] + 1 if new else expected)
    assert plan.dropped == len(offsets) - len(new)
