"""The generated parts of the docs: the record tables of docs/records.md and the fingerprint
table of docs/wire-format.md, each between ``<!-- <block>:begin -->`` and ``<!-- <block>:end -->``
markers; the prose around them stays hand-written.

docs/records.md has one block per role, ``records:<role>`` (``records:request``,
``records:fact``…). A record's row lists its fields as ``name: type = default (doc)``; following
the page's conventions the type is left out for strings and for ``long`` times and durations
(fields ending ``_ms``/``_s``), and facts leave out the four fields every fact starts with.
``JobSpec`` gets a table of its own (field, type, default, meaning).
"""

from __future__ import annotations

import json
import re
from typing import Any

from schemas.codegen_model import FACT_BASE, ROLES, CodegenError, RecordDef, short_name

__all__ = ["FIELD_TABLES", "fingerprint_block", "record_blocks", "replace_blocks"]

FIELD_TABLES: tuple[str, ...] = ("JobSpec",)
"""Records shown as a table of their fields rather than as one row."""


def _type(avro: Any) -> str:
    if isinstance(avro, list):
        return f"nullable&lt;{_type(next(b for b in avro if b != 'null'))}&gt;"
    if isinstance(avro, str):
        return short_name(avro)
    kind = avro.get("type")
    if kind == "array":
        return f"array&lt;{_type(avro['items'])}&gt;"
    if kind == "map":
        return f"map&lt;{_type(avro['values'])}&gt;"
    return short_name(str(avro.get("name", kind)))


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "&#124;").split())


def _field_text(name: str, avro: Any, has_default: bool, default: Any, doc: str) -> str:
    kind = _type(avro)
    timed = name.endswith(("_ms", "_s"))
    implied = (kind == "string" and not timed) or (kind == "long" and timed)
    text = name if implied else f"{name}: {kind}"
    if has_default:
        text += f" = {json.dumps(default, ensure_ascii=False)}"
    return f"{text} ({_cell(doc)})" if doc else text


def _row(record: RecordDef) -> str:
    fields = record.fields[len(FACT_BASE):] if record.role == "fact" else record.fields
    items = [_field_text(f.name, f.type, f.has_default, f.default, f.doc) for f in fields]
    return f"| {record.name} | {', '.join(items)} |"


def _field_table(record: RecordDef) -> list[str]:
    lines = [f"`{record.name}`: {_cell(record.doc)}", "",
             "| field | type | default | meaning |", "|---|---|---|---|"]
    for f in record.fields:
        default = json.dumps(f.default, ensure_ascii=False) if f.has_default else ""
        lines.append(f"| {f.name} | {_type(f.type)} | {default} | {_cell(f.doc)} |")
    return lines


def record_blocks(records: dict[str, RecordDef]) -> dict[str, str]:
    """``records:<role>`` → the markdown of that role's records."""
    blocks = {}
    for role in ROLES:
        members = [r for r in records.values() if r.role == role]
        lines: list[str] = []
        for record in (r for r in members if r.name in FIELD_TABLES):
            lines += [*_field_table(record), ""]
        rows = [r for r in members if r.name not in FIELD_TABLES]
        if rows:
            header = "fields after the common four" if role == "fact" else "fields"
            lines += [f"| record | {header} |", "|---|---|", *(_row(r) for r in rows), ""]
            lines += [f"- **{r.name}**: {_cell(r.doc)}" for r in rows]
        blocks[f"records:{role}"] = "\n".join(lines).strip("\n")
    return blocks


def fingerprint_block(fingerprints: dict[str, bytes]) -> dict[str, str]:
    """``fingerprints`` → the table of every current schema's fingerprint."""
    rows = [f"| `sluice.{name}` | `{fp.hex()}` |" for name, fp in sorted(fingerprints.items())]
    header = ["| record | fingerprint (hex of the 8 bytes as sent) |", "|---|---|"]
    return {"fingerprints": "\n".join([*header, *rows])}


def replace_blocks(text: str, blocks: dict[str, str], path: str) -> str:
    """``text`` with the content between each block's markers replaced."""
    for name, content in blocks.items():
        pattern = re.compile(
            rf"(<!-- {re.escape(name)}:begin -->\n)(?:.*?\n)?(<!-- {re.escape(name)}:end -->)",
            re.DOTALL,
        )
        found = pattern.search(text)
        if found is None:
            raise CodegenError(f"{path} lacks the markers <!-- {name}:begin/end -->")
        text = f"{text[: found.end(1)]}{content}\n{text[found.start(2):]}"
    return text
