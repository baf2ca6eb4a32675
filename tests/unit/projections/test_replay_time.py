"""``sluice replay --at``: a time it cannot show is refused by name, never a traceback."""

from __future__ import annotations

import pytest

from projections.replay import iso, parse_time


def test_a_time_in_ms_or_iso_is_read() -> None:
    assert parse_time("1800000000000") == 1_800_000_000_000
    assert parse_time("2027-01-15T08:00:00Z") == 1_800_000_000_000
    assert iso(parse_time("9999-12-31T23:59:59Z")) == "9999-12-31T23:59:59.000Z"


@pytest.mark.parametrize("text", ["99999999999999999999999999", "\u00b2", "-5", "garbage",
                                  "253402300800000"])
def test_a_time_out_of_range_or_not_a_time_is_a_value_error(text: str) -> None:
    # 99999999999999999999999999 ms passed, then iso() raised OverflowError (a traceback)
    with pytest.raises(ValueError, match="--at"):
        parse_time(text)
