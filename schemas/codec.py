"""Encode and decode Sluice records: Avro single-object encoding, and Confluent framing on read.

Wire forms (see docs/wire-format.md)::

    single-object:  C3 01 | 8-byte CRC-64-AVRO fingerprint (LE) | Avro binary body
    Confluent:      00    | 4-byte schema id (big-endian)       | Avro binary body

:func:`encode` always writes single-object encoding. :func:`decode` reads both: the fingerprint
(or the registered Confluent schema id) names the record type and its writer schema. A writer
schema that is not the current one (an older release under ``schemas/released/``, or a writer
schema registered for a Confluent id) is resolved to the current schema with Avro's resolution
rules, so old records stay readable.

Exceptions (all ``ValueError``)::

    ValueError
     ├── EncodeError   unknown record name, or a record that does not match its schema
     │                 (the message names the field path, e.g. ``SubmitJob.spec.nodes_min``)
     └── DecodeError   empty value, unknown magic byte, unknown fingerprint, unknown Confluent
                       schema id, truncated or corrupt body, trailing bytes

The module-level functions use one shared :class:`Codec` over the package's catalog; build a
``Codec(Catalog(...))`` for another set of schemas (tests do).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from fastavro import schemaless_reader, schemaless_writer
from fastavro.read import SchemaResolutionError
from fastavro.schema import load_schema, to_parsing_canonical_form

from schemas.catalog import CATALOG, Catalog, SchemaDirectoryRepository, crc64_avro

__all__ = [
    "CONFLUENT_HEADER_SIZE",
    "CONFLUENT_MAGIC",
    "DEFAULT_CODEC",
    "SOE_HEADER_SIZE",
    "SOE_MAGIC",
    "Check",
    "Codec",
    "DecodeError",
    "EncodeError",
    "Problem",
    "compile_check",
    "decode",
    "encode",
    "peek_name",
    "register_confluent_schema",
    "unregister_confluent_schema",
]

SOE_MAGIC = b"\xc3\x01"
SOE_HEADER_SIZE = 10
CONFLUENT_MAGIC = 0
CONFLUENT_HEADER_SIZE = 5
_CONFLUENT_ID_MAX = (1 << 32) - 1
_INT_RANGE = (-(1 << 31), (1 << 31) - 1)
_LONG_RANGE = (-(1 << 63), (1 << 63) - 1)


Bytes = bytes | bytearray | memoryview
"""What :func:`decode` and :func:`peek_name` accept: a Kafka value, or a view of one."""


class EncodeError(ValueError):
    """A record could not be encoded: unknown record name, or it does not match its schema."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        """Dotted path of the offending field (``SubmitJob.spec.nodes_min``), when known."""


class DecodeError(ValueError):
    """A value could not be decoded; the message says why."""


@dataclass(frozen=True, slots=True)
class _Reader:
    """How to read one writer schema: its record name, writer schema, and reader if resolving."""

    name: str
    writer: dict[str, Any]
    reader: dict[str, Any] | None
    origin: str


class Codec:
    """Single-object encoding over one :class:`Catalog`, plus a Confluent schema-id map."""

    def __init__(self, catalog: Catalog = CATALOG) -> None:
        self.catalog = catalog
        self._writers: dict[str, tuple[str, bytes, dict[str, Any], Check]] = {}
        self._all_readers: dict[bytes, _Reader] | None = None
        self._confluent: dict[int, _Reader] = {}

    def _writer(self, name: str) -> tuple[str, bytes, dict[str, Any], Check]:
        """The writer of ``name`` (short or full), compiled when first used."""
        writer = self._writers.get(name)
        if writer is None:
            entry = self.catalog.entry(name)  # ValueError when unknown
            writer = (entry.name, SOE_MAGIC + entry.fingerprint, entry.parsed,
                      compile_check(entry.parsed))
            self._writers[entry.name] = self._writers[entry.full_name] = writer
        return writer

    @property
    def _readers(self) -> dict[bytes, _Reader]:
        """Fingerprint → reader for every current and released schema (built on first use)."""
        if self._all_readers is None:
            catalog, readers = self.catalog, {}
            for entry in catalog.released_entries():
                if entry.name in catalog.names:
                    readers[entry.fingerprint] = _Reader(
                        entry.name, entry.parsed, catalog.entry(entry.name).parsed,
                        f"release {entry.release}"
                    )
            for entry in catalog.entries():
                readers[entry.fingerprint] = _Reader(entry.name, entry.parsed, None, "current")
            self._all_readers = readers
        return self._all_readers

    # -- encoding -------------------------------------------------------------------------

    def encode(self, name: str, record: Mapping[str, Any]) -> bytes:
        """Encode ``record`` as the current schema of ``name`` in single-object encoding.

        Fields with a default may be omitted (the default is written); fields without one are
        required; unknown fields, wrong types and out-of-range ints are refused with an
        :class:`EncodeError` naming the field. ``name`` is short (``SubmitJob``) or full.
        """
        try:
            short_name, header, parsed, check = self._writer(name)
        except ValueError:
            raise EncodeError(
                f"unknown record name {name!r}; expected one of {', '.join(self.catalog.names)}"
            ) from None
        problem = check(record)
        if problem is not None:
            path = short_name + problem[0]
            raise EncodeError(f"{path}: {problem[1]}", field=path)
        buffer = BytesIO()
        buffer.write(header)
        try:
            schemaless_writer(buffer, parsed, record, strict_allow_default=True)
        except (ValueError, TypeError, AttributeError, OverflowError, KeyError) as error:
            # The check above should have caught it; keep fastavro's own words.
            raise EncodeError(f"{short_name}: {type(error).__name__}: {error}") from error
        return buffer.getvalue()

    # -- decoding -------------------------------------------------------------------------

    def _reader_for(self, data: Bytes) -> tuple[_Reader, int]:
        """Find the writer schema named by the header of ``data``; the body starts at the int."""
        size = len(data)
        if size == 0:
            raise DecodeError("empty value: expected C3 01 + fingerprint or 00 + schema id")
        magic = data[0]
        if magic == 0xC3:
            if size < SOE_HEADER_SIZE:
                raise DecodeError(
                    f"truncated single-object header: {size} bytes, need {SOE_HEADER_SIZE}"
                )
            if data[1] != 0x01:
                raise DecodeError(f"unknown magic bytes 0xc3 0x{data[1]:02x}: expected 0xc3 0x01")
            fp = bytes(data[2:SOE_HEADER_SIZE])
            reader = self._readers.get(fp)
            if reader is None:
                raise DecodeError(f"unknown fingerprint {fp.hex()} (CRC-64-AVRO, little-endian)")
            return reader, SOE_HEADER_SIZE
        if magic == CONFLUENT_MAGIC:
            if size < CONFLUENT_HEADER_SIZE:
                raise DecodeError(
                    f"truncated Confluent header: {size} bytes, need {CONFLUENT_HEADER_SIZE}"
                )
            schema_id = int.from_bytes(data[1:CONFLUENT_HEADER_SIZE], "big")
            reader = self._confluent.get(schema_id)
            if reader is None:
                raise DecodeError(f"unknown Confluent schema id {schema_id}")
            return reader, CONFLUENT_HEADER_SIZE
        raise DecodeError(
            f"unknown magic byte 0x{magic:02x}: expected 0xc3 (single-object) or 0x00 (Confluent)"
        )

    def decode(self, data: Bytes) -> tuple[str, dict[str, Any]]:
        """Decode a single-object or Confluent-framed value to ``(record name, record)``.

        The header names the writer schema; the body is read with it and, if it is not the
        current schema, resolved to the current one. Raises :class:`DecodeError`.
        """
        reader, start = self._reader_for(data)
        stream = BytesIO(data)
        stream.seek(start)
        try:
            record = schemaless_reader(stream, reader.writer, reader.reader)
        except SchemaResolutionError as error:
            raise DecodeError(
                f"{reader.name}: cannot resolve the {reader.origin} schema to the current one: "
                f"{error}"
            ) from error
        except EOFError as error:
            raise DecodeError(
                f"{reader.name}: truncated body ({len(data) - start} bytes): {error or 'EOF'}"
            ) from error
        except Exception as error:  # fastavro raises many kinds on corrupt input
            raise DecodeError(
                f"{reader.name} ({reader.origin} schema): corrupt body: "
                f"{type(error).__name__}: {error}"
            ) from error
        end = stream.tell()
        if end != len(data):
            raise DecodeError(
                f"{reader.name}: {len(data) - end} trailing bytes after the body "
                f"(body ends at byte {end} of {len(data)})"
            )
        if not isinstance(record, dict):  # pragma: no cover - every schema is a record
            raise DecodeError(f"{reader.name}: body is not a record")
        return reader.name, record

    def peek_name(self, data: Bytes) -> str | None:
        """The record name the header of ``data`` announces, without decoding the body.

        ``None`` when the header is missing, malformed or names an unknown schema.
        """
        if len(data) >= SOE_HEADER_SIZE and data[0] == 0xC3 and data[1] == 0x01:
            reader = self._readers.get(bytes(data[2:SOE_HEADER_SIZE]))
        elif len(data) >= CONFLUENT_HEADER_SIZE and data[0] == CONFLUENT_MAGIC:
            reader = self._confluent.get(int.from_bytes(data[1:CONFLUENT_HEADER_SIZE], "big"))
        else:
            return None
        return None if reader is None else reader.name

    # -- Confluent schema ids -------------------------------------------------------------

    def register_confluent_schema(
        self, schema_id: int, name: str, writer_schema: str | Mapping[str, Any] | None = None,
        references: Mapping[str, Any] | None = None,
    ) -> None:
        """Map a Confluent schema id to a record name, for reading Confluent-framed values.

        Without ``writer_schema`` the writer is assumed to be the current schema of ``name``.
        With it (JSON text or object, as the registry returns it; ``sluice.*`` named types may be
        referenced by name), values are resolved from that writer schema to the current one.
        ``references`` maps a full type name to the JSON of a type the writer schema refers to
        (a registry's schema references); those win over the current files.
        Re-registering an id replaces it.
        """
        if not 0 <= schema_id <= _CONFLUENT_ID_MAX:
            raise ValueError(f"Confluent schema id {schema_id} does not fit in 4 bytes")
        current = self.catalog.entry(name)
        if writer_schema is None:
            self._confluent[schema_id] = _Reader(
                current.name, current.parsed, None, f"Confluent id {schema_id}"
            )
            return
        writer = _parse_writer(writer_schema, self.catalog, references or {})
        if writer.get("name") != current.full_name:
            raise ValueError(
                f"Confluent schema id {schema_id}: writer schema is {writer.get('name')!r}, "
                f"not {current.full_name}"
            )
        same = crc64_avro(to_parsing_canonical_form(writer)) == current.fingerprint
        self._confluent[schema_id] = _Reader(
            current.name, writer, None if same else current.parsed, f"Confluent id {schema_id}"
        )

    def unregister_confluent_schema(self, schema_id: int) -> None:
        """Forget a Confluent schema id (no error if it was not registered)."""
        self._confluent.pop(schema_id, None)


class _WriterRepository(SchemaDirectoryRepository):
    """Serves one foreign writer schema; the ``sluice.*`` types it references come from disk."""

    WRITER = "__confluent_writer__"

    def __init__(self, directory: Path, raw: Any, references: Mapping[str, Any]) -> None:
        super().__init__(directory)
        self.raw = raw
        self.references = references

    def load(self, name: str) -> Any:
        if name == self.WRITER:
            return self.raw
        if name in self.references:
            ref = self.references[name]
            return json.loads(ref) if isinstance(ref, str) else ref
        return super().load(name)


def _parse_writer(writer_schema: str | Mapping[str, Any], catalog: Catalog,
                  references: Mapping[str, Any]) -> dict[str, Any]:
    """Parse a foreign writer schema, inlining its references, else the current ``sluice.*``."""
    raw = json.loads(writer_schema) if isinstance(writer_schema, str) else dict(writer_schema)
    repo = _WriterRepository(catalog.schema_dir, raw, references)
    parsed = load_schema(_WriterRepository.WRITER, repo=repo)
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        raise ValueError("a Confluent writer schema must be a record")
    return parsed


# -- record checks ----------------------------------------------------------------------------
#
# fastavro's writer is lax: it writes 2**40 into an Avro int, truncates 2.7 to 2, writes "no" as
# true and splits a string given for an array into characters. Every record is therefore checked
# first by a checker compiled once per schema from closures (about twice as fast as
# fastavro.validation.validate). A checker returns None, or (field path suffix, problem).

Problem = tuple[str, str]
"""Where a value breaks its schema (``.spec.nodes_min``) and how; ``None`` when it does not."""
Check = Callable[[Any], Problem | None]
"""A compiled schema check."""


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _integer_check(kind: str, low: int, high: int) -> Check:
    def check(value: Any) -> Problem | None:
        if value.__class__ is int and low <= value <= high:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            if low <= value <= high:
                return None
            bits = 32 if kind == "int" else 64
            return "", f"{value} does not fit in a {bits}-bit signed {kind}"
        return "", f"expected {kind}, got {_describe(value)}"

    return check


def _type_check(kind: str, accepted: type | tuple[type, ...], refused: type | None = None) -> Check:
    def check(value: Any) -> Problem | None:
        if isinstance(value, accepted) and (refused is None or not isinstance(value, refused)):
            return None
        return "", f"expected {kind}, got {_describe(value)}"

    return check


def _check_null(value: Any) -> Problem | None:
    return None if value is None else ("", f"expected null, got {_describe(value)}")


def _check_boolean(value: Any) -> Problem | None:
    return (
        None
        if value is True or value is False
        else ("", f"expected boolean, got {_describe(value)}")
    )


_PRIMITIVE_CHECKS: dict[str, Check] = {
    "null": _check_null,
    "boolean": _check_boolean,
    "int": _integer_check("int", *_INT_RANGE),
    "long": _integer_check("long", *_LONG_RANGE),
    "float": _type_check("float", (int, float), bool),
    "double": _type_check("double", (int, float), bool),
    "string": _type_check("string", str),
    "bytes": _type_check("bytes", (bytes, bytearray)),
}


def compile_check(schema: Any, named: dict[str, Check] | None = None) -> Check:
    """Compile a fastavro-parsed schema into a check of Python values against it.

    Records must be mappings with every field that has no default and no unknown field; ints and
    longs must be ``int`` (not ``bool``) within range; arrays must be lists or tuples.
    """
    named = {} if named is None else named
    if isinstance(schema, str):
        if schema in _PRIMITIVE_CHECKS:
            return _PRIMITIVE_CHECKS[schema]
        if schema in named:
            return named[schema]
        raise ValueError(f"unknown type {schema!r}")
    if isinstance(schema, list):
        return _union_check(schema, named)
    kind = schema["type"]
    if kind in ("record", "error"):
        return _record_check(schema, named)
    if kind == "array":
        return _array_check(compile_check(schema["items"], named))
    if kind == "map":
        return _map_check(compile_check(schema["values"], named))
    if kind == "enum":
        symbols = frozenset(schema["symbols"])
        named[schema["name"]] = check = _symbol_check(symbols)
        return check
    if kind == "fixed":
        named[schema["name"]] = check = _fixed_check(schema["size"])
        return check
    return compile_check(kind, named)


def _record_check(schema: dict[str, Any], named: dict[str, Check]) -> Check:
    full_name = schema["name"]
    fields: list[tuple[str, bool, Check]] = []

    def check(value: Any) -> Problem | None:
        if not isinstance(value, Mapping):
            return "", f"expected a record {full_name} (a mapping), got {_describe(value)}"
        present = 0
        for name, optional, field_check in fields:
            if name in value:
                present += 1
                problem = field_check(value[name])
                if problem is not None:
                    return f".{name}{problem[0]}", problem[1]
            elif not optional:
                return f".{name}", "required field is missing (it has no default)"
        if present != len(value):
            known = {name for name, _, _ in fields}
            extra = sorted(str(key) for key in value if key not in known)
            return f".{extra[0]}", f"unknown field (not in {full_name})"
        return None

    named[full_name] = check  # before the fields, so that recursive types resolve
    for field in schema["fields"]:
        fields.append((field["name"], "default" in field, compile_check(field["type"], named)))
    return check


def _union_check(branches: list[Any], named: dict[str, Check]) -> Check:
    checks = [compile_check(branch, named) for branch in branches]
    kinds = ", ".join(b if isinstance(b, str) else str(b.get("name", b["type"])) for b in branches)

    def check(value: Any) -> Problem | None:
        for branch_check in checks:
            if branch_check(value) is None:
                return None
        return "", f"expected one of [{kinds}], got {_describe(value)}"

    return check


def _array_check(item_check: Check) -> Check:
    def check(value: Any) -> Problem | None:
        if not isinstance(value, list | tuple):
            return "", f"expected an array (list or tuple), got {_describe(value)}"
        for index, item in enumerate(value):
            problem = item_check(item)
            if problem is not None:
                return f"[{index}]{problem[0]}", problem[1]
        return None

    return check


def _map_check(value_check: Check) -> Check:
    def check(value: Any) -> Problem | None:
        if not isinstance(value, Mapping):
            return "", f"expected a map (a mapping), got {_describe(value)}"
        for key, item in value.items():
            if not isinstance(key, str):
                return "", f"map keys must be strings, got {_describe(key)}"
            problem = value_check(item)
            if problem is not None:
                return f"[{key!r}]{problem[0]}", problem[1]
        return None

    return check


def _symbol_check(symbols: frozenset[str]) -> Check:
    def check(value: Any) -> Problem | None:
        if isinstance(value, str) and value in symbols:
            return None
        return "", f"expected one of the symbols {sorted(symbols)}, got {_describe(value)}"

    return check


def _fixed_check(size: int) -> Check:
    def check(value: Any) -> Problem | None:
        if isinstance(value, bytes | bytearray) and len(value) == size:
            return None
        return "", f"expected {size} bytes, got {_describe(value)}"

    return check


_DEFAULT_CODEC = Codec()
DEFAULT_CODEC = _DEFAULT_CODEC
"""The codec behind the module-level functions (the intake registers registry ids in it)."""
encode = _DEFAULT_CODEC.encode
decode = _DEFAULT_CODEC.decode
peek_name = _DEFAULT_CODEC.peek_name
register_confluent_schema = _DEFAULT_CODEC.register_confluent_schema
unregister_confluent_schema = _DEFAULT_CODEC.unregister_confluent_schema
