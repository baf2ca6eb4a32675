"""``schemas/light_schemas.py``: the schemas of the light processes' records as Python literals.

The CLI encodes one request per call and a node daemon reads its commands and writes its
reports and heartbeats; loading fastavro for that costs more than the rest of a CLI call's start
and a third of an idle daemon's memory (issue 17). :mod:`schemas.writer` and
:mod:`schemas.reader` speak those records without fastavro; they need each record's fully
inlined schema (as fastavro parses it: full names, a named type inlined where it is first used)
and its single-object header. This module emits both, for every record of a role in
:data:`LIGHT_ROLES`, with the documentation and ``sluice.*`` attributes left out (they do not
change the binary form).
"""

from __future__ import annotations

import pprint
from typing import Any

from schemas.catalog import Catalog
from schemas.codegen_python import HEADER

__all__ = ["LIGHT_ROLES", "MODULE", "light_schemas_module"]

SOE_MAGIC = b"\xc3\x01"

MODULE = "schemas/light_schemas.py"
LIGHT_ROLES = ("request", "command", "heartbeat", "dead-letter")
"""The roles whose records the light processes write or read: the CLI's requests; a node
daemon's commands (read), reports (requests), heartbeats and dead letters."""
_KEPT = ("name", "type", "fields", "items", "values", "default", "symbols", "size")


def _strip(schema: Any, named: dict[str, Any], top: bool = False) -> Any:
    """``schema`` with only what decides the binary form (no docs, roles, fastavro keys); a
    nested named record is moved to ``named`` (dependencies first) and left as its name."""
    if isinstance(schema, list):
        return [_strip(branch, named) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    kept = {key: schema[key] for key in _KEPT if key in schema}
    if "fields" in kept:
        kept["fields"] = [_strip(f, named) for f in kept["fields"]]
    for key in ("type", "items", "values"):
        if key in kept and not (key == "type" and isinstance(kept[key], str)):
            kept[key] = _strip(kept[key], named)
    if kept.get("type") == "record" and not top:
        named.setdefault(kept["name"], kept)
        return kept["name"]
    return kept


def _literal(value: Any, indent: str) -> list[str]:
    text = pprint.pformat(value, width=96 - len(indent), sort_dicts=False, compact=True)
    return [indent + line for line in text.splitlines()]


def light_schemas_module(catalog: Catalog, names: list[str]) -> str:
    """The text of :data:`MODULE` for the records ``names`` (in that order)."""
    named: dict[str, Any] = {}
    records = {name: _strip(catalog.entry(name).parsed, named, top=True) for name in names}
    lines = [
        HEADER,
        '"""The schemas of the records the light processes speak (roles request, command,',
        "heartbeat, dead-letter), for :mod:`schemas.writer` and :mod:`schemas.reader`.",
        "",
        "``NAMED_TYPES``: the named types those records nest (full name → schema, each after the",
        "types it uses); ``SCHEMAS``: short name → (single-object header: ``C3 01`` +",
        "CRC-64-AVRO fingerprint, the schema without its docs, nested types by name).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)",
        "if TYPE_CHECKING:",
        "    from typing import Any",
        "",
        '__all__ = ["NAMED_TYPES", "SCHEMAS"]',
        "",
        "NAMED_TYPES: dict[str, Any] = {",
    ]
    for full_name, schema in named.items():
        lines.append(f'    "{full_name}": (')
        lines += _literal(schema, "        ")
        lines.append("    ),")
    lines += ["}", "", "SCHEMAS: dict[str, tuple[bytes, Any]] = {"]
    for name, schema in records.items():
        header = SOE_MAGIC + catalog.entry(name).fingerprint
        lines.append(f'    "{name}": (')
        lines.append(f"        {header!r},")
        lines += _literal(schema, "        ")
        lines[-1] += ","
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"
