"""A record's check and Avro body in one straight line of Python, for the common case.

The worker writes two to three facts a submission (``JobQueued`` has 47 fields and a spec of 47
more); :meth:`schemas.codec.Codec.encode` ran the record's check (``schemas.check``) and then
fastavro's writer, which walks the schema field by field (~15 µs for a ``JobQueued`` on the
Intel Xeon guest, with the check ~17 µs). This compiles a schema, once, into one function that
tests each field exactly as the straight-line check does (a ``dict`` with every field, each
value of its exact type and in range) and appends its Avro binary form to a buffer as it goes:
the single-object header and the body, or ``None`` when the record is not that common case
(a missing or unknown field, a subclass, a tuple, a value out of range, a string that is not
valid UTF-8). On ``None`` the codec runs its check and fastavro as before, which decide and
name the problem: the bytes and every :class:`~schemas.check.EncodeError` are the codec's own
(a unit test compares them with fastavro's for every record of the catalog).

Written: null, boolean, int, long, double, string, bytes, records, arrays, maps, and unions with
null (the only kinds the catalog's schemas have; a double only as a ``float``: an ``int`` given
for one goes the codec's way); a schema with any other kind, or a recursive one, gets no
straight writer (``compile_straight_writer`` returns ``None``) and stays on fastavro.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from schemas.check import _INT_RANGE, _LONG_RANGE

__all__ = ["StraightWriter", "compile_straight_writer"]

StraightWriter = Callable[[Any], "bytes | None"]
"""The header and Avro body of a record, or ``None`` when it is not the plain common case."""


def _long(out: bytearray, value: int) -> None:
    """Append ``value`` as an Avro long (zigzag, then 7-bit groups, low first)."""
    n = (value << 1) ^ (value >> 63)
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


class _UnsupportedError(Exception):
    """The schema has a kind this module does not write."""


class _Lines:
    """The function's source, built field by field (indent grows with loops)."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.lines: list[str] = []
        self.named = named
        self.open: set[str] = set()  # records being written: a recursive type is unsupported
        self.depth = 0

    def add(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text + "\n")

    def var(self) -> str:
        self.depth += 1
        return f"v{self.depth}"


def _integer(lines: _Lines, indent: int, v: str, low: int, high: int) -> None:
    """An int (not a bool) in ``low..high``: one byte from 0 to 63 (most of a fact's ints) is
    written before the range is tested, which it is always within."""
    lines.add(indent, f"if {v}.__class__ is not int: return None")
    lines.add(indent, f"if 0 <= {v} < 64: ap({v} << 1)")
    lines.add(indent, f"elif {low} <= {v} <= {high}: _long(out, {v})")
    lines.add(indent, "else: return None")


def _string(lines: _Lines, indent: int, v: str) -> None:
    lines.add(indent, f"if {v}.__class__ is not str: return None")
    lines.add(indent, f"if {v}:")
    lines.add(indent + 1, f"b = {v}.encode()")
    lines.add(indent + 1, "n = len(b)")
    lines.add(indent + 1, "if n < 64: ap(n << 1)")
    lines.add(indent + 1, "else: _long(out, n)")
    lines.add(indent + 1, "out += b")
    lines.add(indent, "else: ap(0)")


def _named_or_primitive(lines: _Lines, indent: int, schema: str, v: str) -> None:
    """Lines for a type given by name: a primitive, or a named type of the schema."""
    if schema == "null":
        lines.add(indent, f"if {v} is not None: return None")
    elif schema == "boolean":
        lines.add(indent, f"if {v} is True: ap(1)")
        lines.add(indent, f"elif {v} is False: ap(0)")
        lines.add(indent, "else: return None")
    elif schema == "int":
        _integer(lines, indent, v, *_INT_RANGE)
    elif schema == "long":
        _integer(lines, indent, v, *_LONG_RANGE)
    elif schema == "string":
        _string(lines, indent, v)
    elif schema == "double":  # Avro: 8 bytes, IEEE 754, little-endian
        lines.add(indent, f"if {v}.__class__ is not float: return None")
        lines.add(indent, f"out += _double({v})")
    elif schema == "bytes":
        lines.add(indent, f"if {v}.__class__ is not bytes: return None")
        lines.add(indent, f"_long(out, len({v}))")
        lines.add(indent, f"out += {v}")
    elif schema in lines.named:
        _value(lines, indent, lines.named[schema], v)
    else:
        raise _UnsupportedError(schema)


def _value(lines: _Lines, indent: int, schema: Any, v: str) -> None:
    """Lines that test ``v`` against ``schema`` (``return None`` if not plain) and write it."""
    if isinstance(schema, str):
        _named_or_primitive(lines, indent, schema, v)
        return
    if isinstance(schema, list):
        _union(lines, indent, schema, v)
        return
    kind = schema["type"]
    if kind == "record":
        _record(lines, indent, schema, v)
    elif kind == "array":
        lines.add(indent, f"if {v}.__class__ is not list: return None")
        lines.add(indent, f"if {v}:")
        lines.add(indent + 1, f"_long(out, len({v}))")
        item = lines.var()
        lines.add(indent + 1, f"for {item} in {v}:")
        _value(lines, indent + 2, schema["items"], item)
        lines.add(indent, "ap(0)")
    elif kind == "map":
        lines.add(indent, f"if {v}.__class__ is not dict: return None")
        lines.add(indent, f"if {v}:")
        lines.add(indent + 1, f"_long(out, len({v}))")
        key, item = lines.var(), lines.var()
        lines.add(indent + 1, f"for {key}, {item} in {v}.items():")
        _string(lines, indent + 2, key)
        _value(lines, indent + 2, schema["values"], item)
        lines.add(indent, "ap(0)")
    elif isinstance(kind, str) and kind in ("null", "boolean", "int", "long", "double", "string",
                                            "bytes"):
        _value(lines, indent, kind, v)
    else:
        raise _UnsupportedError(kind)


def _union(lines: _Lines, indent: int, branches: list[Any], v: str) -> None:
    """A union of null and one type: ``None`` is the null branch (as fastavro picks it),
    anything else the other branch (its own test decides whether it is plain)."""
    if len(branches) != 2 or "null" not in branches:
        raise _UnsupportedError(str(branches))
    null = branches.index("null")
    lines.add(indent, f"if {v} is None: ap({null << 1})")
    lines.add(indent, "else:")
    lines.add(indent + 1, f"ap({(1 - null) << 1})")
    _value(lines, indent + 1, branches[1 - null], v)


def _record(lines: _Lines, indent: int, schema: dict[str, Any], v: str) -> None:
    name = schema["name"]
    if name in lines.open:
        raise _UnsupportedError(f"recursive {name}")
    lines.open.add(name)
    lines.named.setdefault(name, schema)
    fields = schema["fields"]
    lines.add(indent, f"if {v}.__class__ is not dict or len({v}) != {len(fields)}: return None")
    for field in fields:
        field_v = lines.var()
        lines.add(indent, f"{field_v} = {v}[{field['name']!r}]")
        _value(lines, indent, field["type"], field_v)
    lines.open.discard(name)


def compile_straight_writer(schema: dict[str, Any], header: bytes) -> StraightWriter | None:
    """The straight writer of a fastavro-parsed record ``schema`` (its single-object
    ``header`` first), or ``None`` when the schema has a kind this module does not write."""
    lines = _Lines({})
    lines.add(0, "def write(value):")
    lines.add(1, "out = bytearray(_header)")
    lines.add(1, "ap = out.append")
    lines.add(1, "try:")
    try:
        _record(lines, 2, schema, "value")
    except _UnsupportedError:
        return None
    lines.add(1, "except (KeyError, UnicodeEncodeError):")  # a missing field; a lone surrogate
    lines.add(2, "return None")
    lines.add(1, "return bytes(out)")
    space: dict[str, Any] = {"_long": _long, "_double": struct.Struct("<d").pack,
                             "_header": header}
    exec("".join(lines.lines), space)  # the schema's own field names (Avro names), as repr
    write: StraightWriter = space["write"]
    return write
