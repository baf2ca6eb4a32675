"""Decode the light processes' records without fastavro: a node daemon's reader of its commands.

:func:`decode` answers as :func:`schemas.codec.decode` does. A single-object value whose
fingerprint is the *current* schema of a record in :data:`schemas.light_schemas.SCHEMAS` (a
command, a request, a heartbeat, a dead letter) has its body read here; everything else goes to
the codec, which loads fastavro then: another record, an older release's writer schema (Avro
resolution), Confluent framing, a malformed header, and any body this reader does not read to
the last byte. So a value this module cannot read is decided by the codec, word for word: its
record, or its :class:`~schemas.check.DecodeError`. This reader may refuse more than fastavro
(a boolean byte other than 0 or 1, an ``int`` outside 32 bits, a varint longer than 10 bytes);
it never accepts what the codec refuses, and a unit test compares the two on valid and on
corrupted values of every record of the set.

Why not fastavro here: it is the codec everywhere else; a node daemon idles for days between a
few commands, and fastavro's import is about 10 MiB of its memory (issue 17).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from schemas.light_schemas import NAMED_TYPES, SCHEMAS
from schemas.schema_walk import Builders, compile_schema

__all__ = ["compile_reader", "decode"]

Read = Callable[[bytes, int], tuple[Any, int]]
"""Reads one value of a schema from ``data`` at ``pos``: (value, position after it)."""

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


class _UnreadableError(Exception):
    """This reader does not read the body; the codec decides (never leaves this module)."""


def _read_long(data: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    for _ in range(10):
        if pos >= len(data):
            raise _UnreadableError
        byte = data[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        if byte < 0x80:
            if n >> 64:  # a 10th byte above 1: more than 64 bits, no long
                raise _UnreadableError
            return (n >> 1) ^ -(n & 1), pos
        shift += 7
    raise _UnreadableError  # a varint of more than 10 bytes is no long


def _read_int(data: bytes, pos: int) -> tuple[int, int]:
    value, pos = _read_long(data, pos)
    if not _INT_MIN <= value <= _INT_MAX:
        raise _UnreadableError
    return value, pos


def _read_null(data: bytes, pos: int) -> tuple[None, int]:
    return None, pos


def _read_boolean(data: bytes, pos: int) -> tuple[bool, int]:
    if pos >= len(data) or data[pos] > 1:
        raise _UnreadableError
    return data[pos] == 1, pos + 1


def _read_bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    size, pos = _read_long(data, pos)
    end = pos + size
    if size < 0 or end > len(data):
        raise _UnreadableError
    return data[pos:end], end


def _read_string(data: bytes, pos: int) -> tuple[str, int]:
    raw, pos = _read_bytes(data, pos)
    try:
        return raw.decode(), pos
    except UnicodeDecodeError:
        raise _UnreadableError from None


_PRIMITIVES: dict[str, Read] = {
    "null": _read_null,
    "boolean": _read_boolean,
    "int": _read_int,
    "long": _read_long,
    "string": _read_string,
    "bytes": _read_bytes,
}


def compile_reader(schema: Any, named: dict[str, Read] | None = None) -> Read:
    """Compile a fastavro-parsed schema (of the types above) into a reader of its binary form."""
    return compile_schema(_BUILDERS, schema, named)


def _record_reader(schema: dict[str, Any], named: dict[str, Read]) -> Read:
    fields: list[tuple[str, Read]] = []

    def read(data: bytes, pos: int) -> tuple[dict[str, Any], int]:
        record: dict[str, Any] = {}
        for name, field_read in fields:
            record[name], pos = field_read(data, pos)
        return record, pos

    named[schema["name"]] = read  # before the fields, so that recursive types resolve
    fields.extend((f["name"], compile_reader(f["type"], named)) for f in schema["fields"])
    return read


def _union_reader(branches: list[Any], named: dict[str, Read]) -> Read:
    readers = [compile_reader(branch, named) for branch in branches]

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        index, pos = _read_long(data, pos)
        if not 0 <= index < len(readers):
            raise _UnreadableError
        return readers[index](data, pos)

    return read


def _blocks(data: bytes, pos: int, read_item: Callable[[bytes, int], int]) -> int:
    """Read Avro blocks (a count, a byte size when the count is negative, the items) until the
    empty block; ``read_item`` reads one item and returns the position after it."""
    while True:
        count, pos = _read_long(data, pos)
        if count == 0:
            return pos
        if count < 0:
            count = -count
            _, pos = _read_long(data, pos)  # the block's size in bytes, for skipping
        if count > len(data) - pos:  # each item of these schemas takes a byte at least
            raise _UnreadableError
        for _ in range(count):
            pos = read_item(data, pos)


def _array_reader(item_read: Read) -> Read:
    def read(data: bytes, pos: int) -> tuple[list[Any], int]:
        items: list[Any] = []

        def one(data: bytes, pos: int) -> int:
            item, pos = item_read(data, pos)
            items.append(item)
            return pos

        return items, _blocks(data, pos, one)

    return read


def _map_reader(value_read: Read) -> Read:
    def read(data: bytes, pos: int) -> tuple[dict[str, Any], int]:
        values: dict[str, Any] = {}

        def one(data: bytes, pos: int) -> int:
            key, pos = _read_string(data, pos)
            values[key], pos = value_read(data, pos)
            return pos

        return values, _blocks(data, pos, one)

    return read


_BUILDERS: Builders[Read] = Builders("schemas.reader", _PRIMITIVES, _record_reader, _union_reader,
                                  _array_reader, _map_reader)


@cache
def _readers() -> dict[bytes, tuple[str, Read]]:
    """Fingerprint (the 8 bytes after ``C3 01``) → (record name, reader), compiled once."""
    named: dict[str, Read] = {}
    for schema in NAMED_TYPES.values():
        compile_reader(schema, named)
    return {header[2:]: (name, compile_reader(schema, dict(named)))
            for name, (header, schema) in SCHEMAS.items()}


def decode(data: bytes | bytearray | memoryview) -> tuple[str, dict[str, Any]]:
    """Decode a value to ``(record name, record)``, exactly as :func:`schemas.codec.decode`."""
    if not isinstance(data, bytes | bytearray | memoryview):  # a tombstone's None: the codec
        from schemas.codec import decode as codec_decode  # noqa: PLC0415 - names the error
        return codec_decode(data)
    raw = bytes(data)
    if len(raw) >= 10 and raw[0] == 0xC3 and raw[1] == 0x01:
        found = _readers().get(raw[2:10])
        if found is not None:
            name, read = found
            try:
                record, end = read(raw, 10)
            except (_UnreadableError, RecursionError):
                pass
            else:
                if end == len(raw):
                    return name, record
    from schemas.codec import decode as codec_decode  # noqa: PLC0415 - not ours to read: fastavro

    return codec_decode(raw)
