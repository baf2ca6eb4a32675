"""The simulator's hot-path memos answer what a fresh computation would: equal demands are one
object equal to a new one, a SLUID text reads the same the second time (and a bad one is
still refused), a first-come queue's priorities are ones that cannot be written."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.jobs import demands
from scheduler.jobs.demands import demand_of
from scheduler.scheduling.priority import ones
from schemas.sluid import InvalidSluidError, format_sluid, parse_sluid


def test_equal_counts_give_one_demand_equal_to_a_fresh_one() -> None:
    first = demand_of(3, 0, 7, 2, 1, "a100", 4096, False)
    again = demand_of(3, 0, 7, 2, 1, "a100", 4096, False)
    assert again is first
    assert first == demands.demand_of.__wrapped__(3, 0, 7, 2, 1, "a100", 4096, False)
    assert (first.nodes_min, first.nodes_max, first.cpus) == (3, 3, 6)  # 7 tasks over 3 nodes
    other = demand_of(3, 0, 7, 2, 1, "a100", 4096, True)
    assert other is not first and other.exclusive and not first.exclusive


def test_the_demand_memo_is_bounded_and_answers_the_same_after_it_is_cleared() -> None:
    before = demand_of(1, 1, 1, 1, 0, "", 0, False)
    limit = demand_of.cache_info().maxsize or 0
    for cpus in range(limit + 1):
        demand_of(1, 1, 1, cpus, 0, "", 0, False)
    assert 0 < demand_of.cache_info().currsize <= limit
    assert demand_of(1, 1, 1, 1, 0, "", 0, False) == before


def test_a_sluid_text_reads_the_same_twice_and_a_bad_one_is_refused_every_time() -> None:
    number = (2 << 52) | (1_700_000_000_000 << 10) | 5
    text = format_sluid(number)
    assert parse_sluid(text) == number
    assert parse_sluid(text) == number  # from the memo
    assert parse_sluid(text.lower()) == number  # another spelling of the same id
    for _ in range(2):
        with pytest.raises(InvalidSluidError):
            parse_sluid("s" + "U" * 13)  # U is not Crockford Base32


def test_first_come_priorities_are_read_only_ones_of_the_asked_length() -> None:
    for n in (0, 1, 5, 300, 2):
        prios = ones(n)
        assert prios.dtype == np.int64 and prios.tolist() == [1] * n
        if n:
            with pytest.raises(ValueError):
                prios[0] = 2
