"""The core's inlined SLUID minting and text conversions equal schemas.sluid's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler import initial_state
from scheduler.shard.sluids import format_fast, parse_fast, time_seq
from scheduler.shard.stamp import Stamper
from schemas.sluid import SluidClock, compose, decode, format_sluid, mint, parse_sluid

times = st.lists(st.integers(0, 2**41), min_size=1, max_size=50)


@settings(max_examples=300)
@given(st.integers(2, 4094), st.integers(0, 2**41), times, st.integers(0, 1100))
def test_the_stamper_mints_what_schemas_sluid_mint_mints(
    cluster: int, start: int, steps: list[int], burst: int
) -> None:
    state = initial_state("s", cluster)
    clock = SluidClock(cluster, start, 5)
    state.meta.last_sluid = format_sluid(compose(cluster, start, 5))
    for now in [*steps, *([steps[-1]] * burst)]:
        stamper = Stamper(state, now)
        stamper.time_ms = now  # mint at exactly this time, as a pass at ``now`` would
        number, clock = mint(clock, now)
        assert stamper.new_sluid() == format_sluid(number)
        state.meta.last_sluid = format_sluid(number)


@settings(max_examples=500)
@given(st.integers(1, 2**64 - 1))
def test_fast_text_conversions_equal_the_reference(number: int) -> None:
    text = format_sluid(number)
    assert format_fast(number) == text
    assert parse_fast(text) == number == parse_sluid(text)
    assert parse_fast(text.lower()) == number
    fields = decode(number)
    assert time_seq(number) == (fields.unix_ms, fields.sequence)
