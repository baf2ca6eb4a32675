"""The package around the record modules: ``names.py`` and ``__init__.py``.

:func:`python_files` gives every generated file of ``scheduler/records/`` (path relative to the
repository → text): the role modules of :mod:`schemas.codegen_python` plus

- ``names.py``: ``ROLES`` (record name → role) and one ``frozenset`` per role
  (``REQUEST_NAMES``, ``INBOX_NAMES``, ``FACT_NAMES``, ``COMMAND_NAMES``, ``TYPE_NAMES``…);
- ``__init__.py``: re-exports all of it, with the hand-written ``CloseCycle`` and ``Request``
  of ``scheduler/records/internal.py`` and the converters of the hand-written
  ``scheduler/records/wire.py`` (``RECORD_TYPES``, ``as_record``, ``from_record``…), which
  dispatches to the generated ``wire_*`` modules and holds no schema data.
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
"""What ``__init__.py`` re-exports of the hand-written ``scheduler/records/wire.py``."""


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
    files[f"{PACKAGE}/__init__.py"] = _init_module(records)
    return files
