"""SLUIDs: Slurm's worked examples, minting (borrow, clock steps), the text form and its parser."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas import (
    InvalidSluidError,
    SluidClock,
    SluidGenerator,
    decode_sluid,
    format_sluid,
    mint,
    parse_sluid,
)
from schemas.sluid import CLUSTER_ID_MAX, CLUSTER_ID_MIN, SEQUENCE_MAX, TIME_MAX, compose

CLUSTER_0X123 = 0x123
NOV_1_2025_MS = int(datetime(2025, 11, 1, tzinfo=UTC).timestamp() * 1000)
SLUIDS = st.integers(min_value=1, max_value=(1 << 64) - 1)


# -- Slurm's worked example ---------------------------------------------------------------------


def test_cluster_0x123_at_nov_1_2025_mints_slurms_two_example_ids() -> None:
    clock = SluidClock(CLUSTER_0X123)
    first, clock = mint(clock, NOV_1_2025_MS)
    second, clock = mint(clock, NOV_1_2025_MS)
    assert format_sluid(first) == "s14DK8YBDF0000"
    assert format_sluid(second) == "s14DK8YBDF0001"


def test_decoding_the_example_gives_back_cluster_time_and_sequence() -> None:
    fields = decode_sluid("s14DK8YBDF0001")
    assert (fields.cluster_id, fields.unix_ms, fields.sequence) == (0x123, NOV_1_2025_MS, 1)
    assert fields.time == datetime(2025, 11, 1, tzinfo=UTC)
    assert fields.as_json() == {
        "cluster_id": 0x123,
        "unix_ms": NOV_1_2025_MS,
        "sequence": 1,
        "time": "2025-11-01T00:00:00.000Z",
    }


def test_decode_accepts_the_number_as_well_as_the_text() -> None:
    number = compose(0x123, NOV_1_2025_MS, 5)
    assert decode_sluid(number) == decode_sluid(format_sluid(number))


# -- minting ------------------------------------------------------------------------------------


def test_mint_is_pure_the_same_clock_and_time_give_the_same_id() -> None:
    clock = SluidClock(7, last_ms=NOV_1_2025_MS, sequence=3)
    assert mint(clock, NOV_1_2025_MS) == mint(clock, NOV_1_2025_MS)
    assert clock == SluidClock(7, last_ms=NOV_1_2025_MS, sequence=3)


def test_a_new_millisecond_restarts_the_sequence_at_zero() -> None:
    clock = SluidClock(7, last_ms=NOV_1_2025_MS, sequence=17)
    number, clock = mint(clock, NOV_1_2025_MS + 5)
    assert decode_sluid(number).sequence == 0
    assert clock == SluidClock(7, NOV_1_2025_MS + 5, 0)


def test_the_1025th_id_in_one_millisecond_borrows_the_next_millisecond() -> None:
    clock = SluidClock(CLUSTER_0X123)
    ids = []
    for _ in range(SEQUENCE_MAX + 1):
        number, clock = mint(clock, NOV_1_2025_MS)
        ids.append(number)
    last = decode_sluid(ids[-1])
    assert (last.unix_ms, last.sequence) == (NOV_1_2025_MS, SEQUENCE_MAX)

    borrowed, clock = mint(clock, NOV_1_2025_MS)
    fields = decode_sluid(borrowed)
    assert (fields.unix_ms, fields.sequence) == (NOV_1_2025_MS + 1, 0)
    assert borrowed > ids[-1]

    # When the wall clock reaches the borrowed millisecond, the sequence carries on.
    following, _ = mint(clock, NOV_1_2025_MS + 1)
    assert (decode_sluid(following).unix_ms, decode_sluid(following).sequence) == (
        NOV_1_2025_MS + 1,
        1,
    )
    assert ids == sorted(set(ids))


def test_a_clock_that_steps_back_keeps_the_last_millisecond_and_counts_on() -> None:
    clock = SluidClock(CLUSTER_0X123)
    before, clock = mint(clock, NOV_1_2025_MS)
    after, clock = mint(clock, NOV_1_2025_MS - 60_000)
    assert after > before
    assert decode_sluid(after).unix_ms == NOV_1_2025_MS
    assert decode_sluid(after).sequence == 1


@given(
    st.lists(
        st.integers(min_value=NOV_1_2025_MS - 5, max_value=NOV_1_2025_MS + 5),
        min_size=1,
        max_size=3000,
    )
)
def test_ids_are_strictly_increasing_whatever_the_clock_does(times: list[int]) -> None:
    clock = SluidClock(CLUSTER_0X123)
    previous = 0
    for now_ms in times:
        number, clock = mint(clock, now_ms)
        assert number > previous
        assert format_sluid(number) > (format_sluid(previous) if previous else "")
        previous = number


def test_clock_after_a_replayed_id_mints_past_it_and_ignores_older_ids() -> None:
    clock = SluidClock(CLUSTER_0X123)
    replayed = compose(CLUSTER_0X123, NOV_1_2025_MS, 9)
    clock = clock.after(replayed)
    assert clock == SluidClock(CLUSTER_0X123, NOV_1_2025_MS, 9)
    assert clock.after(compose(CLUSTER_0X123, NOV_1_2025_MS, 2)) is clock
    number, _ = mint(clock, NOV_1_2025_MS)
    assert number == replayed + 1


def test_generator_gives_unique_increasing_text_ids_across_threads() -> None:
    generator = SluidGenerator(CLUSTER_0X123)
    minted: list[list[int]] = [[] for _ in range(4)]

    def work(out: list[int]) -> None:
        out.extend(generator.new_int() for _ in range(2000))

    threads = [threading.Thread(target=work, args=(out,)) for out in minted]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [n for out in minted for n in out]
    assert len(set(everything)) == len(everything)
    for out in minted:
        assert out == sorted(out)
    assert all(decode_sluid(n).cluster_id == CLUSTER_0X123 for n in everything)
    text = generator.new()
    assert text.startswith("s") and len(text) == 14
    assert parse_sluid(text) > max(everything)


# -- cluster ids --------------------------------------------------------------------------------


@pytest.mark.parametrize("cluster_id", [0, 1, 4095, -1, 4096])
def test_reserved_and_out_of_range_cluster_ids_are_refused(cluster_id: int) -> None:
    with pytest.raises(InvalidSluidError):
        SluidClock(cluster_id)
    with pytest.raises(InvalidSluidError):
        SluidGenerator(cluster_id)


@pytest.mark.parametrize("cluster_id", [CLUSTER_ID_MIN, CLUSTER_ID_MAX])
def test_the_first_and_last_usable_cluster_ids_are_accepted(cluster_id: int) -> None:
    number, _ = mint(SluidClock(cluster_id), NOV_1_2025_MS)
    assert decode_sluid(number).cluster_id == cluster_id


@pytest.mark.parametrize(
    ("cluster_id", "unix_ms", "sequence"),
    [(4096, 0, 0), (-1, 0, 0), (2, TIME_MAX + 1, 0), (2, -1, 0), (2, 0, SEQUENCE_MAX + 1)],
)
def test_compose_refuses_fields_that_do_not_fit(
    cluster_id: int, unix_ms: int, sequence: int
) -> None:
    with pytest.raises(InvalidSluidError):
        compose(cluster_id, unix_ms, sequence)


# -- text form ----------------------------------------------------------------------------------


def test_text_form_is_s_and_13_upper_case_crockford_characters() -> None:
    assert format_sluid(1) == "s0000000000001"
    assert format_sluid((1 << 64) - 1) == "sFZZZZZZZZZZZZ"


@pytest.mark.parametrize("number", [0, -1, 1 << 64])
def test_format_refuses_zero_negative_and_numbers_beyond_64_bits(number: int) -> None:
    with pytest.raises(InvalidSluidError):
        format_sluid(number)


@pytest.mark.parametrize(
    "text",
    [
        "s14DK8YBDF0001",  # canonical
        "S14DK8YBDF0001",  # upper-case prefix
        "s14dk8ybdf0001",  # lower case
        "s14DK8YBDFOOO1",  # O for 0
        "s14DK8YBDF000I",  # I for 1
        "s14DK8YBDF000L",  # L for 1
        "s14DK8YBDF000l",  # l for 1
        "s14DK8YBDF000i",  # i for 1
        "s14DK8YBDFooo1",  # o for 0
    ],
)
def test_parse_accepts_crockford_aliases_and_either_case(text: str) -> None:
    assert parse_sluid(text) == compose(0x123, NOV_1_2025_MS, 1)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("s14DK8YBDF000", "13 characters"),
        ("s14DK8YBDF00011", "15 characters"),
        ("", "empty"),
        ("x14DK8YBDF0001", "wrong prefix"),
        ("14DK8YBDF00011", "no prefix"),
        ("s14DK8YBDF000U", "U is not Crockford"),
        ("s14DK8YBDF000!", "punctuation"),
        ("s14DK8YBDF000*", "check symbol"),
        ("s14DK8YBDF 001", "space"),
        ("s0000000000000", "zero"),
        ("sooooooooooooo", "zero through aliases"),
        ("sG000000000000", "first character beyond F overflows 64 bits"),
        ("sZZZZZZZZZZZZZ", "overflow"),
    ],
)
def test_parse_rejects_bad_text(text: str, why: str) -> None:
    with pytest.raises(InvalidSluidError):
        parse_sluid(text)


def test_invalid_sluid_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a SLUID"):
        parse_sluid("nope")


@given(SLUIDS)
def test_format_then_parse_gives_the_number_back(number: int) -> None:
    text = format_sluid(number)
    assert len(text) == 14
    assert parse_sluid(text) == number
    assert parse_sluid(text.lower()) == number


@given(SLUIDS, SLUIDS)
def test_lexicographic_order_of_the_text_equals_numeric_order(a: int, b: int) -> None:
    assert (format_sluid(a) < format_sluid(b)) == (a < b)
    assert (format_sluid(a) == format_sluid(b)) == (a == b)


def test_independent_generators_in_the_same_millisecond_rarely_collide() -> None:
    from unittest import mock

    from schemas.sluid import SluidGenerator

    with mock.patch("schemas.sluid.time.time_ns", return_value=1_761_955_200_000_000_000):
        ids = {SluidGenerator(0x123).new() for _ in range(64)}

    # 64 processes minting in one millisecond: with Slurm's fixed start (0) all 64 would be
    # equal; with a random start in 0..511 a few may collide, never most.
    assert len(ids) > 48


_SLUID_CHARS = "0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyzOoIiLl"


@given(st.text(alphabet=_SLUID_CHARS + "sSuU!é\n -", min_size=0, max_size=16)
       | st.builds(lambda rest: "s" + rest, st.text(alphabet=_SLUID_CHARS + "é\n", min_size=12,
                                                     max_size=14)))
def test_parse_accepts_a_text_exactly_when_the_pattern_it_replaced_matches(text: str) -> None:
    """The quick path of ``parse_sluid`` takes what ``[sS][<Crockford digits>]{13}`` fully
    matched; the slow path gives the same numbers and errors anyway."""
    import re

    from schemas.sluid import _DIGITS, _parsed

    pattern = re.compile(f"[sS][{re.escape(_DIGITS)}]{{13}}")
    assert set(_DIGITS) == set(_SLUID_CHARS)
    try:
        number = parse_sluid(text)
    except InvalidSluidError:
        assert not pattern.fullmatch(text) or not _parsed(text)
    else:
        assert pattern.fullmatch(text)
        assert format_sluid(number).lower() == text.lower().translate(
            str.maketrans("oil", "011"))
