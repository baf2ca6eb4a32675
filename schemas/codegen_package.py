"""The package around the record modules: ``names.py``, ``wire.py`` and ``__init__.py``.

:func:`python_files` gives every generated file of ``scheduler/records/`` (path relative to the
repository → text): the role modules of :mod:`schemas.codegen_python` plus

- ``names.py``: ``ROLES`` (record name → role) and one ``frozenset`` per role
  (``REQUEST_NAMES``, ``INBOX_NAMES``, ``FACT_NAMES``, ``COMMAND_NAMES``, ``TYPE_NAMES``…);
- ``wire.py``: ``RECORD_TYPES``, ``as_record``, ``from_record``, ``record_fields``,
  ``record_defaults``, dispatching to the converters of each role module;
- ``__init__.py``: re-exports all of it, with the hand-written ``CloseCycle`` and ``Request``
  of ``scheduler/records/internal.py``.
"""

from __future__ import annotations

from schemas.codegen_model import MODULE_OF_ROLE, ROLES, RecordDef
from schemas.codegen_python import (
    HEADER,
    class_module,
    from_import,
    pack,
    sort_all,
    wire_module,
)

__all__ = ["PACKAGE", "python_files"]

PACKAGE = "scheduler/records"
_MODULES = ("spec", "requests", "facts", "commands", "messages")
_UNION_OF = {"requests": "WireRequest", "facts": "Fact", "commands": "NodeCommand"}
_WIRE_API = ("RECORD_TYPES", "Record", "as_record", "from_record", "record_defaults",
             "record_fields")

_WIRE_BODY = '''

Record = Any
"""A record object: request, fact, node command, message or named type."""

_OUT: dict[type, Callable[[Any], dict[str, Any]]] = {{{out}}}
_IN: dict[str, Callable[[Mapping[str, Any]], Any]] = {{{into}}}
_IN.update({{f"sluice.{{name}}": convert for name, convert in list(_IN.items())}})
_NAMES: dict[str, tuple[str, ...]] = {{{names}}}
_DEFAULTS: dict[str, dict[str, Any]] = {{{defaults}}}
RECORD_TYPES: dict[str, type] = {{cls.__name__: cls for cls in _OUT}}
"""Every generated record class by record name."""
_FIELDS: dict[type, tuple[str, ...]] = {{cls: _NAMES[name] for name, cls in RECORD_TYPES.items()}}


def as_record(obj: Record) -> tuple[str, dict[str, Any]]:
    """``(record name, Avro-ready dict)`` of a record object (tuples → lists, nested → dicts)."""
    cls = type(obj)
    try:
        return cls.__name__, _OUT[cls](obj)
    except KeyError:
        if cls in _OUT:
            raise
        raise ValueError(f"{{cls.__name__}} is not a record type") from None


def from_record(name: str, record: Mapping[str, Any]) -> Record:
    """The record object ``name`` (plain or ``sluice.``-qualified) built from ``record``.

    Missing fields get their schema defaults (``ValueError`` if one without a default is
    missing); fields the schema does not know are ignored (a newer writer).
    """
    try:
        convert = _IN[name]
    except KeyError:
        raise ValueError(f"unknown record type {{name!r}}") from None
    return convert(record)


def record_fields(cls: type) -> tuple[str, ...]:
    """The wire field names of a record class, in schema order."""
    try:
        return _FIELDS[cls]
    except KeyError:
        raise ValueError(f"{{cls.__name__}} is not a record type") from None


def record_defaults(name: str) -> dict[str, Any]:
    """The schema defaults of record ``name`` as Avro-ready values (a fresh copy)."""
    try:
        return copy.deepcopy(_DEFAULTS[name.removeprefix("sluice.")])
    except KeyError:
        raise ValueError(f"unknown record type {{name!r}}") from None
'''


def _names_module(records: dict[str, RecordDef]) -> str:
    lines = [HEADER, '"""The record names of each role (the ``sluice.role`` of each schema)."""',
             "", "from __future__ import annotations", "",
             "from collections.abc import Mapping", "from types import MappingProxyType", ""]
    constants = [f"{role.upper().replace('-', '_')}_NAMES" for role in ROLES]
    lines += pack("__all__ = [", [f'"{n}"' for n in sort_all(["ROLES", *constants])], "]", "")
    lines += ["", "ROLES: Mapping[str, str] = MappingProxyType({"]
    lines += [f'    "{r.name}": "{r.role}",' for r in records.values()]
    lines += ["})", '"""Record name → role (``request``, ``inbox``, ``fact``, ``command``…)."""']
    for role, constant in zip(ROLES, constants, strict=True):
        members = [f'"{r.name}"' for r in records.values() if r.role == role]
        lines += pack(f"{constant}: frozenset[str] = frozenset({{", members, "})", "")
        if not members:
            lines[-1] = f"{constant}: frozenset[str] = frozenset()"
    return "\n".join(lines) + "\n"


def _wire_aggregate() -> str:
    mods = [*(f"wire_{m}" for m in _MODULES), "internal"]
    lines = [HEADER, '"""Records on the wire: record object ↔ (record name, Avro-ready dict).',
             "", "Dispatches to the straight-line converters of each role module (``wire_*``)",
             "and of the hand-written ``internal`` records (``CloseCycle``).",
             '"""', "", "from __future__ import annotations", "", "import copy",
             "from collections.abc import Callable, Mapping", "from typing import Any", ""]
    lines += [*from_import("scheduler.records", mods), ""]
    lines += pack("__all__ = [", [f'"{n}"' for n in sort_all(list(_WIRE_API))], "]", "")
    body = _WIRE_BODY.format(
        out=", ".join(f"**{m}.OUT" for m in mods), into=", ".join(f"**{m}.IN" for m in mods),
        names=", ".join(f"**{m}.NAMES" for m in mods),
        defaults=", ".join(f"**{m}.DEFAULTS" for m in mods),
    )
    fixed = []
    for line in body.split("\n"):
        if len(line) > 100 and line.endswith("}") and "{**" in line:
            head, _, items = line.partition("{")
            fixed += pack(head + "{", items.rstrip("}").split(", "), "}", "")
        else:
            fixed.append(line)
    return "\n".join([*lines, *fixed]).rstrip("\n") + "\n"


def _init_module(records: dict[str, RecordDef]) -> str:
    lines = [HEADER, '"""Sluice\'s records, generated from ``schemas/*.avsc`` (docs/records.md).',
             "", "Classes (``SubmitJob``, ``JobQueued``, ``LaunchRun``…), the unions",
             "``WireRequest``, ``Fact``, ``NodeCommand`` and ``Request``, the record names of",
             "each role and the converters ``as_record``/``from_record``.", '"""', ""]
    imports: dict[str, list[str]] = {"internal": ["CloseCycle", "Request"]}
    for module in _MODULES:
        members = [r.name for r in records.values() if MODULE_OF_ROLE[r.role] == module]
        members += ["FactBase"] if module == "facts" else []
        members += [_UNION_OF[module]] if module in _UNION_OF else []
        if members:
            imports[module] = members
    imports["names"] = ["ROLES", *(f"{role.upper().replace('-', '_')}_NAMES" for role in ROLES)]
    imports["wire"] = list(_WIRE_API)
    exported: list[str] = []
    for module in sorted(imports):
        lines += from_import(f"scheduler.records.{module}", imports[module])
        exported += imports[module]
    lines += ["", *pack("__all__ = [", [f'"{n}"' for n in sort_all(exported)], "]", "")]
    return "\n".join(lines) + "\n"


def python_files(records: dict[str, RecordDef]) -> dict[str, str]:
    """Every generated file of ``scheduler/records/``: repository-relative path → text."""
    files: dict[str, str] = {}
    for module in _MODULES:
        members = [r for r in records.values() if MODULE_OF_ROLE[r.role] == module]
        files[f"{PACKAGE}/{module}.py"] = class_module(module, members, records)
        files[f"{PACKAGE}/wire_{module}.py"] = wire_module(module, members)
    files[f"{PACKAGE}/names.py"] = _names_module(records)
    files[f"{PACKAGE}/wire.py"] = _wire_aggregate()
    files[f"{PACKAGE}/__init__.py"] = _init_module(records)
    return files
