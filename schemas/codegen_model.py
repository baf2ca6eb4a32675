"""What the generator reads: every ``schemas/<Name>.avsc`` as a :class:`RecordDef`.

Each schema names its **role** with the custom attribute ``"sluice.role"`` (Avro ignores
attributes it does not know, and the Parsing Canonical Form drops them, so a role never changes a
fingerprint). The role says where a record travels and which generated module holds its class:

========================  ====================================================  ==============
role                      travels on                                            module
========================  ====================================================  ==============
``request``               ``sluice.requests`` (clients, node daemons → intake)   ``requests``
``inbox``                 ``sluice.shard-inbox`` only (Sluice's own agents)      ``requests``
``fact``                  ``sluice.events``, the ledger                          ``facts``
``command``               ``sluice.node-commands``                               ``commands``
``heartbeat``             ``sluice.heartbeats``                                  ``messages``
``notification``          ``sluice.job-starts``                                  ``messages``
``dead-letter``           ``sluice.dead-letters``                                ``messages``
``type``                  nowhere alone: a named type nested in records          ``spec``
========================  ====================================================  ==============

Every fact starts with :data:`FACT_BASE` (the shard's stamp); they become the shared base class
``FactBase``. A schema the generator cannot turn into Python raises :class:`CodegenError` naming
the file and the field.
"""

from __future__ import annotations

import json
import keyword
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "FACT_BASE",
    "MODULE_OF_ROLE",
    "ROLES",
    "CodegenError",
    "FieldDef",
    "RecordDef",
    "load_records",
    "python_default",
    "python_type",
    "short_name",
]

ROLES: tuple[str, ...] = (
    "type", "request", "inbox", "fact", "command", "heartbeat", "notification", "dead-letter",
)
MODULE_OF_ROLE: dict[str, str] = {
    "type": "spec",
    "request": "requests",
    "inbox": "requests",
    "fact": "facts",
    "command": "commands",
    "heartbeat": "messages",
    "notification": "messages",
    "dead-letter": "messages",
}
FACT_BASE: tuple[str, ...] = ("event_sluid", "shard", "shard_seq", "time_ms")
"""The four fields every fact starts with, in this order."""

_PRIMITIVES = {
    "null": "None",
    "boolean": "bool",
    "int": "int",
    "long": "int",
    "float": "float",
    "double": "float",
    "bytes": "bytes",
    "string": "str",
}
_RESERVED = frozenset({"field", "dataclass", "dataclasses", "Mapping", "Any"})


class CodegenError(ValueError):
    """A schema the generator cannot turn into Python (the message names file and field)."""


@dataclass(frozen=True, slots=True)
class FieldDef:
    """One field of a record schema."""

    name: str
    type: Any
    """The raw Avro type as written in the ``.avsc`` (references stay names)."""
    doc: str
    has_default: bool
    default: Any


@dataclass(frozen=True, slots=True)
class RecordDef:
    """One ``.avsc`` file: a record type with its role."""

    name: str
    role: str
    doc: str
    fields: tuple[FieldDef, ...]
    path: Path

    @property
    def module(self) -> str:
        """The generated module holding the class (``requests``, ``facts``…)."""
        return MODULE_OF_ROLE[self.role]


def short_name(ref: str) -> str:
    """``sluice.JobSpec`` → ``JobSpec``."""
    return ref.removeprefix("sluice.")


def _field(path: Path, raw: Any) -> FieldDef:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise CodegenError(f"{path.name}: a field without a name: {raw!r}")
    name = raw["name"]
    if not name.isidentifier() or keyword.iskeyword(name) or name in _RESERVED:
        raise CodegenError(f"{path.name}: field {name!r} cannot be a Python attribute name")
    return FieldDef(
        name=name,
        type=raw.get("type"),
        doc=str(raw.get("doc", "")),
        has_default="default" in raw,
        default=raw.get("default"),
    )


def _record(path: Path) -> RecordDef:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise CodegenError(f"{path.name}: not readable JSON: {error}") from error
    if not isinstance(raw, dict) or raw.get("type") != "record":
        raise CodegenError(f"{path.name}: the generator reads record schemas only")
    if short_name(str(raw.get("name"))) != path.stem:
        raise CodegenError(f"{path.name}: defines {raw.get('name')!r}, not sluice.{path.stem}")
    role = raw.get("sluice.role")
    if role not in ROLES:
        raise CodegenError(
            f'{path.name}: "sluice.role" is {role!r}; it must be one of {", ".join(ROLES)}'
        )
    fields = tuple(_field(path, f) for f in raw.get("fields", []))
    record = RecordDef(path.stem, role, str(raw.get("doc", "")), fields, path)
    if role == "fact" and tuple(f.name for f in fields[: len(FACT_BASE)]) != FACT_BASE:
        raise CodegenError(f"{path.name}: a fact must start with the fields {', '.join(FACT_BASE)}")
    return record


def load_records(schema_dir: Path) -> dict[str, RecordDef]:
    """Every ``<Name>.avsc`` of ``schema_dir``, by name, sorted; checks references and bases."""
    records = {p.stem: _record(p) for p in sorted(schema_dir.glob("*.avsc"))}
    if not records:
        raise CodegenError(f"no .avsc files in {schema_dir}")
    for record in records.values():
        for f in record.fields:
            python_type(f.type, records, f"{record.path.name}: field {f.name!r}")
            if f.has_default:
                python_default(f.type, f.default, f"{record.path.name}: field {f.name!r}")
    facts = [r for r in records.values() if r.role == "fact"]
    def stamp(record: RecordDef) -> list[tuple[str, Any, bool, Any]]:
        return [(f.name, f.type, f.has_default, f.default) for f in record.fields[:4]]

    for fact in facts[1:]:
        if stamp(fact) != stamp(facts[0]):
            raise CodegenError(
                f"{fact.path.name}: the fields {', '.join(FACT_BASE)} differ from "
                f"{facts[0].path.name}'s (every fact shares them)"
            )
    return records


def _nullable(avro: list[Any], where: str) -> Any:
    branches = [b for b in avro if b != "null"]
    if len(avro) != 2 or len(branches) != 1:
        raise CodegenError(f"{where}: only unions of null and one type are supported: {avro!r}")
    return branches[0]


def python_type(avro: Any, records: dict[str, RecordDef], where: str) -> str:
    """The Python annotation of an Avro type (tuples for arrays, ``Mapping`` for maps)."""
    if isinstance(avro, list):
        return f"{python_type(_nullable(avro, where), records, where)} | None"
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return _PRIMITIVES[avro]
        ref = records.get(short_name(avro))
        if ref is None or ref.role != "type":
            raise CodegenError(f"{where}: {avro!r} is not a named type (role \"type\") here")
        return ref.name
    if isinstance(avro, dict):
        kind = avro.get("type")
        if kind == "array":
            return f"tuple[{python_type(avro.get('items'), records, where)}, ...]"
        if kind == "map":
            return f"Mapping[str, {python_type(avro.get('values'), records, where)}]"
        if kind == "enum":
            return "str"
        if kind == "fixed":
            return "bytes"
        if kind in _PRIMITIVES:
            return _PRIMITIVES[kind]
        if kind == "record":
            raise CodegenError(f"{where}: define the nested record in its own .avsc file")
    raise CodegenError(f"{where}: unsupported Avro type {avro!r}")


def python_default(avro: Any, value: Any, where: str) -> str:
    """The Python source of an Avro default (``()`` for ``[]``, a factory for ``{}``)."""
    if isinstance(avro, list):
        if value is None:
            return "None"
        return python_default(_nullable(avro, where), value, where)
    kind = avro.get("type") if isinstance(avro, dict) else avro
    if kind == "array" and isinstance(value, list):
        items = [python_default(avro["items"], v, where) for v in value]
        return "()" if not items else "(" + ", ".join(items) + ",)"
    if kind == "map" and isinstance(value, dict):
        values = ", ".join(
            f"{json.dumps(k)}: {python_default(avro['values'], v, where)}" for k, v in value.items()
        )
        return "field(default_factory=dict)" if not value else (
            f"field(default_factory=lambda: {{{values}}})"
        )
    if kind in ("string", "enum") and isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if kind in ("bytes", "fixed") and isinstance(value, str):
        return repr(value.encode("latin-1"))
    if kind in ("int", "long") and isinstance(value, int) and not isinstance(value, bool):
        return repr(value)
    if kind in ("float", "double") and isinstance(value, int | float):
        return repr(float(value))
    if kind == "boolean" and isinstance(value, bool):
        return repr(value)
    if kind == "null" and value is None:
        return "None"
    raise CodegenError(f"{where}: unsupported default {value!r} for type {avro!r}")
