"""``schemas/request_schemas.py``: the requests' writer schemas as Python literals.

The CLI encodes one request per call, and loading fastavro to do it costs more than the rest of
its start (issue 17). :mod:`schemas.writer` writes requests without fastavro; it needs each
request's fully inlined schema (as fastavro parses it: full names, a named type inlined where it
is first used) and its single-object header. This module emits both, for every record of role
``request``, with the documentation and ``sluice.*`` attributes left out (they do not change the
binary form).
"""

from __future__ import annotations

import pprint
from typing import Any

from schemas.catalog import Catalog
from schemas.codegen_python import HEADER

__all__ = ["MODULE", "request_schemas_module"]

SOE_MAGIC = b"\xc3\x01"

MODULE = "schemas/request_schemas.py"
_KEPT = ("name", "type", "fields", "items", "values", "default", "symbols", "size")


def _strip(schema: Any) -> Any:
    """``schema`` with only what decides the binary form (no docs, roles, fastavro keys)."""
    if isinstance(schema, list):
        return [_strip(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    kept = {key: schema[key] for key in _KEPT if key in schema}
    if "fields" in kept:
        kept["fields"] = [_strip(f) for f in kept["fields"]]
    for key in ("type", "items", "values"):
        if key in kept and not (key == "type" and isinstance(kept[key], str)):
            kept[key] = _strip(kept[key])
    return kept


def request_schemas_module(catalog: Catalog, names: list[str]) -> str:
    """The text of :data:`MODULE` for the requests ``names`` (in that order)."""
    lines = [
        HEADER,
        '"""The writer schemas of the requests (role ``request``), read by :mod:`schemas.writer`.',
        "",
        "``REQUEST_SCHEMAS``: short name → (single-object header: ``C3 01`` + CRC-64-AVRO",
        "fingerprint, the schema as fastavro parses it without its docs).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        '__all__ = ["REQUEST_SCHEMAS"]',
        "",
        "REQUEST_SCHEMAS: dict[str, tuple[bytes, Any]] = {",
    ]
    for name in names:
        entry = catalog.entry(name)
        header = SOE_MAGIC + entry.fingerprint
        text = pprint.pformat(_strip(entry.parsed), width=88, sort_dicts=False, compact=True)
        lines.append(f'    "{name}": (')
        lines.append(f"        {header!r},")
        lines += ["        " + line for line in text.splitlines()]
        lines[-1] += ","
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"
