"""A single-object value's Avro body read in one straight line of Python, for the common case.

The worker decodes every submission twice (the intake classifies it, the shard decides it:
two threads, no shared memory of it) and each was fastavro's reader walking the schema field by
field (~12 µs for a ``SubmitJob`` on the Intel Xeon guest). This compiles a current schema,
once, into one function that reads each field of the body in order and returns the record (a
``dict`` in the schema's field order, as fastavro returns it), or ``None`` when the body is not
the plain case: a truncated body, trailing bytes, a union index or boolean byte out of range, an
array or map written in sized blocks, a varint longer than 64 bits, an ``int`` out of its 32
bits, or text that is not UTF-8. On ``None`` the codec reads the value with fastavro as before,
which reads it or names the problem: the records and every
:class:`~schemas.check.DecodeError` are the codec's own (a unit test compares them with
fastavro's for every record of the catalog, whole, cut short and with bytes changed).

Read: null, boolean, int, long, string, bytes, records, arrays, maps, and unions with null
(the only kinds the catalog's schemas have); a schema with any other kind, or a recursive one,
gets no straight reader (``compile_straight_reader`` returns ``None``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schemas.check import _INT_RANGE

__all__ = ["StraightReader", "compile_straight_reader"]

StraightReader = Callable[[bytes], "dict[str, Any] | None"]
"""The record of a single-object value (header already matched), or ``None`` when the value is
not the plain case (fastavro then reads it, or says why it cannot)."""

_U64 = 1 << 64


class _NotPlainError(Exception):
    """The body is not the plain case: fastavro reads it (or names the problem)."""


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """The Avro long (zigzag varint) at ``pos`` and the position after it."""
    b = data[pos]
    n = b & 0x7F
    shift = 7
    pos += 1
    while b & 0x80:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
    if n >= _U64:  # more than 64 bits: fastavro's C reader wraps; let it say what it reads
        raise _NotPlainError
    return (n >> 1) ^ -(n & 1), pos


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.named: dict[str, Any] = {}
        self.open: set[str] = set()
        self.count = 0

    def add(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text + "\n")

    def var(self) -> str:
        self.count += 1
        return f"v{self.count}"


def _read_long(lines: _Lines, indent: int, v: str) -> None:
    lines.add(indent, "b = data[pos]")
    lines.add(indent, f"if b < 128: {v} = (b >> 1) ^ -(b & 1); pos += 1")
    lines.add(indent, f"else: {v}, pos = _long(data, pos)")


def _read_sized(lines: _Lines, indent: int, v: str, text: bool) -> None:
    """A string (``text``) or bytes: its length, then that many bytes. An empty one (its
    length a single 0 byte, most of a spec's strings) is read without slicing or decoding."""
    lines.add(indent, "b = data[pos]")
    lines.add(indent, f"if not b: {v} = {'' if text else 'b'}''; pos += 1")
    lines.add(indent, "else:")
    lines.add(indent + 1, "if b < 128: n = (b >> 1) ^ -(b & 1); pos += 1")
    lines.add(indent + 1, "else: n, pos = _long(data, pos)")
    lines.add(indent + 1, "end = pos + n")
    lines.add(indent + 1, "if n < 0 or end > size: raise _NotPlainError")
    lines.add(indent + 1, f"{v} = data[pos:end]{'.decode()' if text else ''}")
    lines.add(indent + 1, "pos = end")


def _value(lines: _Lines, indent: int, schema: Any, v: str) -> None:
    """Lines that read one value of ``schema`` into the variable ``v``."""
    if isinstance(schema, str):
        if schema == "null":
            lines.add(indent, f"{v} = None")
        elif schema == "boolean":
            lines.add(indent, "b = data[pos]; pos += 1")
            lines.add(indent, "if b > 1: raise _NotPlainError")
            lines.add(indent, f"{v} = b == 1")
        elif schema == "int":  # one byte is always in range: only a longer one is tested
            lines.add(indent, "b = data[pos]")
            lines.add(indent, f"if b < 128: {v} = (b >> 1) ^ -(b & 1); pos += 1")
            lines.add(indent, "else:")
            lines.add(indent + 1, f"{v}, pos = _long(data, pos)")
            lines.add(indent + 1, f"if not {_INT_RANGE[0]} <= {v} <= {_INT_RANGE[1]}: "
                                  "raise _NotPlainError")
        elif schema == "long":
            _read_long(lines, indent, v)
        elif schema in ("string", "bytes"):
            _read_sized(lines, indent, v, schema == "string")
        elif schema in lines.named:
            _value(lines, indent, lines.named[schema], v)
        else:
            raise _NotPlainError(schema)
        return
    if isinstance(schema, list):
        if len(schema) != 2 or "null" not in schema:
            raise _NotPlainError(str(schema))
        null = schema.index("null")
        lines.add(indent, "b = data[pos]; pos += 1")
        lines.add(indent, f"if b == {null << 1}: {v} = None")
        lines.add(indent, f"elif b == {(1 - null) << 1}:")
        _value(lines, indent + 1, schema[1 - null], v)
        lines.add(indent, "else: raise _NotPlainError")
        return
    kind = schema["type"]
    if kind == "record":
        _record(lines, indent, schema, v)
    elif kind in ("array", "map"):
        _blocks(lines, indent, schema, v, kind == "map")
    elif isinstance(kind, str) and kind in ("null", "boolean", "int", "long", "string", "bytes"):
        _value(lines, indent, kind, v)
    else:
        raise _NotPlainError(kind)


def _blocks(lines: _Lines, indent: int, schema: dict[str, Any], v: str, is_map: bool) -> None:
    """An array or a map: blocks of a positive count, then a zero count."""
    count, item = lines.var(), lines.var()
    lines.add(indent, f"{v} = {{}}" if is_map else f"{v} = []")
    _read_long(lines, indent, count)
    lines.add(indent, f"while {count}:")
    lines.add(indent + 1, f"if {count} < 0: raise _NotPlainError")
    lines.add(indent + 1, f"for _ in range({count}):")
    if is_map:
        key = lines.var()
        _read_sized(lines, indent + 2, key, True)
        _value(lines, indent + 2, schema["values"], item)
        lines.add(indent + 2, f"{v}[{key}] = {item}")
    else:
        _value(lines, indent + 2, schema["items"], item)
        lines.add(indent + 2, f"{v}.append({item})")
    _read_long(lines, indent + 1, count)


def _record(lines: _Lines, indent: int, schema: dict[str, Any], v: str) -> None:
    name = schema["name"]
    if name in lines.open:
        raise _NotPlainError(f"recursive {name}")
    lines.open.add(name)
    lines.named.setdefault(name, schema)
    names = []
    for field in schema["fields"]:
        field_v = lines.var()
        _value(lines, indent, field["type"], field_v)
        names.append(f"{field['name']!r}: {field_v}")
    lines.add(indent, f"{v} = {{{', '.join(names)}}}")
    lines.open.discard(name)


def compile_straight_reader(schema: dict[str, Any], start: int) -> StraightReader | None:
    """The straight reader of a fastavro-parsed record ``schema`` whose body starts at byte
    ``start``, or ``None`` when the schema has a kind this module does not read."""
    lines = _Lines()
    lines.add(0, "def read(data):")
    lines.add(1, f"pos = {start}")
    lines.add(1, "size = len(data)")
    lines.add(1, "try:")
    try:
        _record(lines, 2, schema, "record")
    except _NotPlainError:
        return None
    lines.add(1, "except (IndexError, UnicodeDecodeError, _NotPlainError):")
    lines.add(2, "return None")
    lines.add(1, "return record if pos == size else None")
    space: dict[str, Any] = {"_long": _long, "_NotPlainError": _NotPlainError}
    exec("".join(lines.lines), space)  # the schema's own field names (Avro names), as repr
    read: StraightReader = space["read"]
    return read
