"""Fast SLUID text conversions for the hot path, equal to :mod:`schemas.sluid` (tested).

``format_fast`` encodes two Crockford characters per table lookup; ``parse_fast`` maps the
Crockford alphabet onto Python's base-32 digits and lets ``int`` do the rest. Both give the
same results as ``schemas.sluid.format_sluid`` / ``parse_sluid`` on valid SLUIDs;
``time_seq`` is the (milliseconds, sequence) part that orders a shard's own SLUIDs.
"""

from __future__ import annotations

__all__ = ["format_fast", "parse_fast", "time_seq"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS = tuple(a + b for a in _ALPHABET for b in _ALPHABET)
_PYTHON_DIGITS = "0123456789abcdefghijklmnopqrstuv"
_TO_PYTHON = str.maketrans(
    _ALPHABET + _ALPHABET.lower() + "OoIiLl",
    _PYTHON_DIGITS + _PYTHON_DIGITS + "001111",
)
_LOW52 = (1 << 52) - 1


_PREFIXES: dict[int, str] = {}


def format_fast(number: int) -> str:
    """``schemas.sluid.format_sluid`` for a valid 64-bit SLUID, several times faster.

    Everything above the 10-bit sequence is the same within one millisecond, so that prefix
    is cached (a bounded memo of a pure function).
    """
    high = number >> 10
    prefix = _PREFIXES.get(high)
    if prefix is None:
        if len(_PREFIXES) > 4096:
            _PREFIXES.clear()
        prefix = _PREFIXES[high] = _prefix(number)
    return prefix + _PAIRS[number & 1023]


def _prefix(number: int) -> str:
    """The text of ``number`` but its last two characters (the 10-bit sequence)."""
    pairs = _PAIRS
    return "".join((
        "s",
        _ALPHABET[number >> 60],
        pairs[(number >> 50) & 1023],
        pairs[(number >> 40) & 1023],
        pairs[(number >> 30) & 1023],
        pairs[(number >> 20) & 1023],
        pairs[(number >> 10) & 1023],
    ))


def parse_fast(text: str) -> int:
    """``schemas.sluid.parse_sluid`` for a well-formed SLUID text (no validation)."""
    return int(text[1:].translate(_TO_PYTHON), 32)


def time_seq(number: int) -> tuple[int, int]:
    """The (unix ms, sequence) fields of a SLUID number."""
    low = number & _LOW52
    return low >> 10, low & 1023
