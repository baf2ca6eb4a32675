"""Filling a record's missing fields with its schema defaults (hand-written; used by wire_*).

Avro readers always give every field; plain dicts (tests, JSON, hand-made records) may not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["complete", "tolerant"]

T = TypeVar("T")


def complete(
    name: str, record: Mapping[str, Any], names: tuple[str, ...], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """``record``'s fields of ``names``, missing ones set to ``defaults``.

    Unknown fields are dropped (a newer writer). ``ValueError`` when ``record`` is not a
    mapping or lacks a field that has no default.
    """
    if not isinstance(record, Mapping):
        raise ValueError(f"a {name} record must be a mapping, not {type(record).__name__}")
    full = dict(defaults)
    full.update({key: value for key, value in record.items() if key in names})
    missing = [n for n in names if n not in full]
    if missing:
        raise ValueError(f"{name} record lacks required fields {missing}")
    return full


def tolerant(
    name: str,
    make: Callable[[Mapping[str, Any]], T],
    names: Mapping[str, tuple[str, ...]],
    defaults: Mapping[str, Mapping[str, Any]],
) -> Callable[[Mapping[str, Any]], T]:
    """``make`` (straight-line: every field looked up) that falls back to :func:`complete`.

    The fast path costs nothing when the record has every field (as Avro readers give it); a
    record missing fields (or not a mapping) is completed with the schema defaults first.
    """

    def convert(record: Mapping[str, Any]) -> T:
        try:
            return make(record)
        except (KeyError, TypeError):
            return make(complete(name, record, names[name], defaults[name]))

    convert.__name__ = f"from_wire_{name}"
    return convert
