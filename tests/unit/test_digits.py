"""Whole numbers from text others wrote: ASCII digits only, bounded (schemas.digits)."""

from __future__ import annotations

import pytest

from schemas.digits import INT_DIGITS, LONG_DIGITS, ascii_integer, ascii_whole


@pytest.mark.parametrize("text,value", [("0", 0), ("7", 7), ("0042", 42),
                                        ("9" * LONG_DIGITS, int("9" * LONG_DIGITS))])
def test_ascii_digits_are_read(text: str, value: int) -> None:
    assert ascii_whole(text) == value


@pytest.mark.parametrize("text", ["", " 1", "1 ", "+1", "-1", "1_000", "²", "٣", "\uff11", "1.0",
                                  "0x10", "1e3", "9" * (LONG_DIGITS + 1), "9" * 5000])
def test_anything_else_is_none(text: str) -> None:
    assert ascii_whole(text) is None


def test_the_bound_is_the_callers() -> None:
    assert ascii_whole("9" * INT_DIGITS, INT_DIGITS) == int("9" * INT_DIGITS)
    assert ascii_whole("1" + "0" * INT_DIGITS, INT_DIGITS) is None
    assert ascii_whole("12", 1) is None


@pytest.mark.parametrize("text,value", [("5", 5), ("+5", 5), ("-5", -5), ("-0", 0),
                                        ("-" + "9" * LONG_DIGITS, -int("9" * LONG_DIGITS))])
def test_a_sign_is_read_once(text: str, value: int) -> None:
    assert ascii_integer(text) == value


@pytest.mark.parametrize("text", ["", "-", "+", "--5", "+-5", "-+5", " -5", "- 5", "-²", "5-"])
def test_a_bad_signed_number_is_none(text: str) -> None:
    assert ascii_integer(text) is None
