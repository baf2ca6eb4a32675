"""Whole numbers written in ASCII digits: the one reading of a number from text that a user, a
client, a peer or a file wrote.

``int`` alone is the wrong reader for such text: it takes ``1_000``, surrounding blanks and the
digits of every script (``int("٣")`` is 3), ``str.isdigit`` is true of ``²``, which ``int``
refuses with Python's words, and ``int`` of a long text takes time quadratic in its length (and
is refused past 4,300 digits). Every place that turns such text into a number goes through
:func:`ascii_whole` or :func:`ascii_integer` with the most digits its field can hold, and says
in its own words what it refuses. Imports nothing (a CLI call loads it).
"""

from __future__ import annotations

__all__ = ["INT_DIGITS", "LONG_DIGITS", "ascii_integer", "ascii_whole"]

LONG_DIGITS = 19
"""The digits of the largest Avro ``long`` (9,223,372,036,854,775,807)."""

INT_DIGITS = 9
"""The most digits every one of whose numbers an Avro ``int`` holds (its largest has 10)."""


def ascii_whole(text: str, max_digits: int = LONG_DIGITS) -> int | None:
    """``text`` as a number ≥ 0 when it is 1 to ``max_digits`` ASCII digits and nothing else
    (no sign, blank or ``_``), else None."""
    if 0 < len(text) <= max_digits and text.isascii() and text.isdigit():
        return int(text)
    return None


def ascii_integer(text: str, max_digits: int = LONG_DIGITS) -> int | None:
    """``text`` as a number when it is one optional ``-`` or ``+`` and then what
    :func:`ascii_whole` reads, else None."""
    sign = text[:1]
    value = ascii_whole(text[1:] if sign in ("-", "+") else text, max_digits)
    return -value if value is not None and sign == "-" else value
