"""Records on the wire: record object ↔ (record name, Avro-ready dict).

Dispatches to the straight-line converters of each role module (``wire_*``, generated from
``schemas/*.avsc`` by ``schemas.codegen``) and of the hand-written ``internal`` records
(``CloseCycle``). This module itself holds no schema data, so it is written by hand.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from scheduler.records import (
    internal,
    wire_commands,
    wire_facts,
    wire_messages,
    wire_requests,
    wire_spec,
)

__all__ = ["RECORD_TYPES", "Record", "as_record", "from_record", "record_defaults", "record_fields"]


Record = Any
"""A record object: request, fact, node command, message or named type."""

_OUT: dict[type, Callable[[Any], dict[str, Any]]] = {
    **wire_spec.OUT, **wire_requests.OUT, **wire_facts.OUT, **wire_commands.OUT,
    **wire_messages.OUT, **internal.OUT,
}
_IN: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    **wire_spec.IN, **wire_requests.IN, **wire_facts.IN, **wire_commands.IN, **wire_messages.IN,
    **internal.IN,
}
_IN.update({f"sluice.{name}": convert for name, convert in list(_IN.items())})
_NAMES: dict[str, tuple[str, ...]] = {
    **wire_spec.NAMES, **wire_requests.NAMES, **wire_facts.NAMES, **wire_commands.NAMES,
    **wire_messages.NAMES, **internal.NAMES,
}
_DEFAULTS: dict[str, dict[str, Any]] = {
    **wire_spec.DEFAULTS, **wire_requests.DEFAULTS, **wire_facts.DEFAULTS, **wire_commands.DEFAULTS,
    **wire_messages.DEFAULTS, **internal.DEFAULTS,
}
RECORD_TYPES: dict[str, type] = {cls.__name__: cls for cls in _OUT}
"""Every generated record class by record name."""
_FIELDS: dict[type, tuple[str, ...]] = {cls: _NAMES[name] for name, cls in RECORD_TYPES.items()}


def as_record(obj: Record) -> tuple[str, dict[str, Any]]:
    """``(record name, Avro-ready dict)`` of a record object (tuples → lists, nested → dicts)."""
    cls = type(obj)
    try:
        return cls.__name__, _OUT[cls](obj)
    except KeyError:
        if cls in _OUT:
            raise
        raise ValueError(f"{cls.__name__} is not a record type") from None


def from_record(name: str, record: Mapping[str, Any]) -> Record:
    """The record object ``name`` (plain or ``sluice.``-qualified) built from ``record``.

    Missing fields get their schema defaults (``ValueError`` if one without a default is
    missing); fields the schema does not know are ignored (a newer writer).
    """
    try:
        convert = _IN[name]
    except KeyError:
        raise ValueError(f"unknown record type {name!r}") from None
    return convert(record)


def record_fields(cls: type) -> tuple[str, ...]:
    """The wire field names of a record class, in schema order."""
    try:
        return _FIELDS[cls]
    except KeyError:
        raise ValueError(f"{cls.__name__} is not a record type") from None


def record_defaults(name: str) -> dict[str, Any]:
    """The schema defaults of record ``name`` as Avro-ready values (a fresh copy)."""
    try:
        return copy.deepcopy(_DEFAULTS[name.removeprefix("sluice.")])
    except KeyError:
        raise ValueError(f"unknown record type {name!r}") from None
