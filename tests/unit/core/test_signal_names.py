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
