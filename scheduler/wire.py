"""Records on the wire: dataclass ↔ (record name, Avro-ready dict).

``as_record(obj)`` gives the record name (the class name; the Avro full name is
``sluice.<name>``) and a dict fastavro can encode: nested ``JobSpec``/``Segment`` as dicts,
tuples as lists, maps as dicts. ``from_record(name, record)`` is the inverse; it accepts the
plain or the ``sluice.``-qualified name, fills missing fields with their defaults and ignores
unknown ones (a newer writer). Converters are generated once per class, so the hot path is one
dict display per record (no ``dataclasses.asdict`` deep copies).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from scheduler import commands, facts, requests
from scheduler.spec import JobSpec, Segment

__all__ = ["RECORD_TYPES", "Record", "as_record", "from_record", "record_fields"]

Record = Any
"""A request, fact or node command dataclass."""

RECORD_TYPES: dict[str, type] = {
    cls.__name__: cls
    for module in (requests, facts, commands)
    for name in module.__all__
    if isinstance(cls := getattr(module, name), type)
    and dataclasses.is_dataclass(cls)
    and name not in {"FactBase"}
}
RECORD_TYPES["JobSpec"] = JobSpec
RECORD_TYPES["Segment"] = Segment


def record_fields(cls: type) -> tuple[str, ...]:
    """The wire field names of a record class, in schema order."""
    return tuple(f.name for f in dataclasses.fields(cls))


def _kind(annotation: str) -> str:
    if "Segment" in annotation:
        return "segments"
    if annotation.endswith("JobSpec"):
        return "spec"
    if annotation.startswith("tuple"):
        return "tuple"
    if annotation.startswith("Mapping"):
        return "map"
    return "plain"


_TO_WIRE = {
    "plain": "o.{0}",
    "tuple": "list(o.{0})",
    "map": "dict(o.{0})",
    "spec": "_spec(o.{0})",
    "segments": "[_segment(s) for s in o.{0}]",
}
_FROM_WIRE = {
    "plain": "r['{0}']",
    "tuple": "tuple(r['{0}'])",
    "map": "dict(r['{0}'])",
    "spec": "_spec_in(r['{0}'])",
    "segments": "tuple(_segment_in(s) for s in r['{0}'])",
}


def _compile(
    cls: type,
) -> tuple[Callable[[Any], dict[str, Any]], Callable[[Mapping[str, Any]], Any]]:
    items = [(f.name, _kind(str(f.type))) for f in dataclasses.fields(cls)]
    out = ", ".join(f"'{n}': " + _TO_WIRE[k].format(n) for n, k in items)
    inner = ", ".join(f"{n}=" + _FROM_WIRE[k].format(n) for n, k in items)
    namespace: dict[str, Any] = {
        "cls": cls,
        "_spec": _spec_out,
        "_segment": _segment_out,
        "_spec_in": _spec_in,
        "_segment_in": _segment_in,
    }
    source = f"def to_wire(o):\n    return {{{out}}}\ndef from_wire(r):\n    return cls({inner})\n"
    exec(source, namespace)
    return namespace["to_wire"], namespace["from_wire"]


def _spec_out(spec: JobSpec) -> dict[str, Any]:
    return _OUT[JobSpec](spec)


def _segment_out(segment: Segment) -> dict[str, Any]:
    return {"index": segment.index, "group": segment.group, "nodes": list(segment.nodes)}


def _complete(cls: type, record: Mapping[str, Any]) -> Mapping[str, Any]:
    """Fill missing fields with their defaults (Avro readers do this; plain dicts may not)."""
    if all(name in record for name in _NAMES[cls]):
        return record
    full = dict(_DEFAULTS[cls])
    full.update({k: v for k, v in record.items() if k in _NAMES[cls]})
    missing = [n for n in _NAMES[cls] if n not in full]
    if missing:
        raise ValueError(f"{cls.__name__} record lacks required fields {missing}")
    return full


def _spec_in(record: Mapping[str, Any] | JobSpec) -> JobSpec:
    if isinstance(record, JobSpec):
        return record
    result: JobSpec = _IN[JobSpec](_complete(JobSpec, record))
    return result


def _segment_in(record: Mapping[str, Any] | Segment) -> Segment:
    if isinstance(record, Segment):
        return record
    full = _complete(Segment, record)
    return Segment(index=full["index"], group=full["group"], nodes=tuple(full["nodes"]))


def _defaults(cls: type) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            result[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            result[f.name] = f.default_factory()
    return result


_OUT: dict[type, Callable[[Any], dict[str, Any]]] = {}
_IN: dict[type, Callable[[Mapping[str, Any]], Any]] = {}
_NAMES: dict[type, tuple[str, ...]] = {}
_DEFAULTS: dict[type, dict[str, Any]] = {}
for _cls in RECORD_TYPES.values():
    _OUT[_cls], _IN[_cls] = _compile(_cls)
    _NAMES[_cls] = record_fields(_cls)
    _DEFAULTS[_cls] = _defaults(_cls)


def as_record(obj: Record) -> tuple[str, dict[str, Any]]:
    """``(record name, Avro-ready dict)`` for a request, fact or node command."""
    cls = type(obj)
    return cls.__name__, _OUT[cls](obj)


def from_record(name: str, record: Mapping[str, Any]) -> Record:
    """The dataclass for record ``name`` (plain or ``sluice.``-qualified) built from ``record``."""
    cls = RECORD_TYPES.get(name.removeprefix("sluice."))
    if cls is None:
        raise ValueError(f"unknown record type {name!r}")
    return _IN[cls](_complete(cls, record))
