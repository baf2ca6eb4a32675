"""Signal names and numbers as a record may carry them (``--signal``, ``scancel -s``): a text
that is no signal is None, never an exception (the shard would refuse it as InternalError)."""

from __future__ import annotations

import pytest

from scheduler.jobs.signal_names import parse_signal


def test_names_and_numbers_are_read() -> None:
    assert parse_signal("USR1") == parse_signal("sigusr1") == parse_signal("10") == 10


@pytest.mark.parametrize("text", ["\u00b2", "RTMIN+\u00b2", "RTMAX-\u00b2", "9" * 5000,
                                  "RTMIN+" + "9" * 5000, "0", "65"])
def test_a_text_that_is_no_signal_is_none(text: str) -> None:
    assert parse_signal(text) is None


@pytest.mark.parametrize("text", ["USR1@" + "9" * 5000, "USR1@\u0663", "USR1@70000", "USR1@-1"])
def test_a_warning_time_not_in_ascii_digits_up_to_65535_is_invalid_not_an_error(
        text: str) -> None:
    from scheduler.jobs.signal_names import parse_signal_spec

    assert parse_signal_spec(text) is None


@pytest.mark.parametrize("text", ["9" * 5000, "\u0663-\u0665", "0-3:\u0662", "1-" + "9" * 12])
def test_an_array_spec_not_in_ascii_digits_within_an_int_is_invalid_not_an_error(
        text: str) -> None:
    from scheduler.jobs.arrays import parse_array

    assert parse_array(text, 1001) is None
