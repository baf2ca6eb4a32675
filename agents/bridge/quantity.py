"""Kubernetes resource quantities (``250m``, ``2``, ``512Mi``, ``4G``) as Sluice numbers."""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

__all__ = ["QuantityError", "cpus", "mem_mb", "parse_quantity"]

_SUFFIX: dict[str, Decimal] = {
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60), "n": Decimal("1e-9"), "u": Decimal("1e-6"),
    "m": Decimal("1e-3"), "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9),
    "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18),
}


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | Decimal) -> Decimal:
    """The value of a quantity (``QuantityError`` for anything else)."""
    raw = str(text).strip()
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if raw.endswith(suffix) and raw[: -len(suffix)]:
            number, factor = raw[: -len(suffix)], _SUFFIX[suffix]
            break
    else:
        number, factor = raw, Decimal(1)
    try:
        value = Decimal(number) * factor
    except InvalidOperation as exc:
        raise QuantityError(f"{raw!r} is not a Kubernetes quantity") from exc
    if not value.is_finite() or value < 0:
        raise QuantityError(f"{raw!r} is not a non-negative quantity")
    return value


def cpus(text: str | int | Decimal) -> int:
    """Whole CPUs for a CPU quantity, rounded up (``500m`` → 1)."""
    return math.ceil(parse_quantity(text))


def mem_mb(text: str | int | Decimal) -> int:
    """Memory in MB (2**20 bytes), rounded up."""
    return math.ceil(parse_quantity(text) / 2**20)
