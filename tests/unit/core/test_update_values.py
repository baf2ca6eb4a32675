"""``UpdateJob`` values parsed by the core (``scheduler.jobs.updates``): whole numbers in ASCII
digits; anything else a named ``InvalidUpdate``, never Python's words."""

from __future__ import annotations

import pytest

from scheduler.jobs.updates import apply_changes
from scheduler.records import JobSpec


def _spec() -> JobSpec:
    return JobSpec(user="alice", command=("true",))


@pytest.mark.parametrize("text", ["²", "1e3", "1_000", "١٢", "9" * 20, "", "-", "0x10", "1.5"])
def test_a_number_that_is_no_ascii_whole_number_is_refused_by_name(text: str) -> None:
    spec, error = apply_changes(_spec(), {"nice": text})
    assert spec == _spec()
    assert error.startswith("nice: ") and "is not a whole number" in error
    assert "int()" not in error


@pytest.mark.parametrize(("text", "value"), [("12", 12), (" 7 ", 7), ("-3", -3), ("+4", 4)])
def test_whole_numbers_with_a_sign_or_spaces_are_taken(text: str, value: int) -> None:
    spec, error = apply_changes(_spec(), {"nice": text})
    assert (error, spec.nice) == ("", value)
