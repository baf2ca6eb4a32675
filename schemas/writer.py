"""Encode the light processes' records without fastavro: the CLI's and a node daemon's encoder.

Loading fastavro and parsing the catalog take about 55 ms, a third of a ``sluice submit``, and
about 10 MiB of a node daemon's memory (issue 17). A request, a report or a heartbeat is a
handful of fields, so this writes its Avro binary body directly from the generated
:data:`schemas.light_schemas.SCHEMAS`, after the same :func:`schemas.check.compile_check` check
the codec runs: the bytes and every :class:`EncodeError` are the codec's own (a unit test
compares them with fastavro's for every record of the set). Only the types those records use
are written: null, boolean, int, long, string, bytes, records, arrays, maps and unions with
null; any other record name goes to :func:`schemas.codec.encode`.

Why not fastavro here: it is the codec everywhere else; these are the paths where its import
cost is paid by processes that start often or idle long, for small records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import cache

from schemas.check import Check, EncodeError, compile_check
from schemas.light_schemas import NAMED_TYPES, SCHEMAS
from schemas.schema_walk import Builders, compile_schema

__all__ = ["compile_writer", "encode", "prepare"]

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Any

    Write = Callable[[bytearray, Any], None]
else:  # the same alias, without typing's Any (issue 17)
    Write = Callable[[bytearray, object], None]
"""Appends the Avro binary form of a (checked) value to a buffer."""


def _write_long(out: bytearray, value: int) -> None:
    n = (value << 1) ^ (value >> 63)  # zigzag
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _write_null(out: bytearray, value: Any) -> None:
    return None


def _write_boolean(out: bytearray, value: Any) -> None:
    out.append(1 if value else 0)


def _write_string(out: bytearray, value: Any) -> None:
    data = value.encode()
    _write_long(out, len(data))
    out += data


def _write_bytes(out: bytearray, value: Any) -> None:
    _write_long(out, len(value))
    out += value


_PRIMITIVES: dict[str, Write] = {
    "null": _write_null,
    "boolean": _write_boolean,
    "int": _write_long,
    "long": _write_long,
    "string": _write_string,
    "bytes": _write_bytes,
}


def _default(schema: Any, value: Any) -> Any:
    """A JSON default as the value to write (Avro writes a bytes default as latin-1 text)."""
    kind = schema[0] if isinstance(schema, list) else schema
    kind = kind.get("type") if isinstance(kind, dict) else kind
    if kind in ("bytes", "fixed") and isinstance(value, str):
        return value.encode("latin-1")
    return value


def compile_writer(schema: Any, named: dict[str, Write] | None = None) -> Write:
    """Compile a fastavro-parsed schema (of the types above) into a writer of checked values."""
    return compile_schema(_BUILDERS, schema, named)


def _record_writer(schema: dict[str, Any], named: dict[str, Write]) -> Write:
    fields: list[tuple[str, bool, Any, Write]] = []

    def write(out: bytearray, value: Any) -> None:
        for name, has_default, default, field_write in fields:
            field_write(out, value[name] if name in value or not has_default else default)

    named[schema["name"]] = write  # before the fields, so that recursive types resolve
    for field in schema["fields"]:
        has_default = "default" in field
        default = _default(field["type"], field["default"]) if has_default else None
        fields.append((field["name"], has_default, default, compile_writer(field["type"], named)))
    return write


def _union_writer(branches: list[Any], named: dict[str, Write]) -> Write:
    """A union of null and one type (the only unions the schemas have: codegen_model refuses
    others): ``None`` is the null branch, as fastavro picks it, anything else the other."""
    if len(branches) != 2 or "null" not in branches:
        raise ValueError(f"schemas.writer writes unions of null and one type, not {branches!r}")
    null = branches.index("null")
    other, other_write = 1 - null, compile_writer(branches[1 - null], named)

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            _write_long(out, null)
        else:
            _write_long(out, other)
            other_write(out, value)

    return write


def _array_writer(item_write: Write) -> Write:
    def write(out: bytearray, value: Any) -> None:
        if value:
            _write_long(out, len(value))
            for item in value:
                item_write(out, item)
        out.append(0)

    return write


def _map_writer(value_write: Write) -> Write:
    def write(out: bytearray, value: Mapping[str, Any]) -> None:
        if value:
            _write_long(out, len(value))
            for key, item in value.items():
                _write_string(out, key)
                value_write(out, item)
        out.append(0)

    return write


_BUILDERS: Builders[Write] = Builders("schemas.writer", _PRIMITIVES, _record_writer, _union_writer,
                                  _array_writer, _map_writer)


_COMPILED: dict[str, tuple[str, bytes, Check, Write]] = {}


@cache
def _named() -> tuple[dict[str, Check], dict[str, Write]]:
    """The check and the writer of every nested named type, compiled once (in order: each
    after the types it uses, so their names resolve)."""
    checks: dict[str, Check] = {}
    writers: dict[str, Write] = {}
    for schema in NAMED_TYPES.values():
        compile_check(schema, checks)
        compile_writer(schema, writers)
    return checks, writers


def _compiled(name: str) -> tuple[str, bytes, Check, Write] | None:
    compiled = _COMPILED.get(name)
    if compiled is None:
        short = name.removeprefix("sluice.")
        found = SCHEMAS.get(short)
        if found is None:
            return None
        header, schema = found
        checks, writers = _named()
        compiled = (short, header, compile_check(schema, dict(checks)),
                    compile_writer(schema, dict(writers)))
        _COMPILED[short] = _COMPILED[schema["name"]] = compiled
    return compiled


def prepare(names: Iterable[str]) -> None:
    """Compile the writers of the records ``names`` now, not on their first :func:`encode`: a
    warm process (the command server, ``cli/command_server.py``) does it once for the children it
    forks, each of which would otherwise compile the same writer again."""
    for name in names:
        _compiled(name)


def encode(name: str, record: Mapping[str, Any]) -> bytes:
    """Encode ``record`` as :func:`schemas.codec.encode` does: same bytes, same errors."""
    compiled = _compiled(name)
    if compiled is None:
        from schemas.codec import encode as codec_encode  # noqa: PLC0415 - not a light record: fastavro

        return codec_encode(name, record)
    short, header, check, write = compiled
    problem = check(record)
    if problem is not None:
        path = short + problem[0]
        raise EncodeError(f"{path}: {problem[1]}", field=path)
    out = bytearray(header)
    try:
        write(out, record)
    except (ValueError, TypeError, AttributeError, OverflowError, KeyError) as error:
        raise EncodeError(f"{short}: {type(error).__name__}: {error}") from error
    return bytes(out)
