"""Encode and decode Sluice records: Avro single-object encoding, and Confluent framing on read.

Wire forms (see docs/wire-format.md)::

    single-object:  C3 01 | 8-byte CRC-64-AVRO fingerprint (LE) | Avro binary body
    Confluent:      00    | 4-byte schema id (big-endian)       | Avro binary body

:func:`encode` always writes single-object encoding. :func:`decode` reads both: the fingerprint
(or the registered Confluent schema id) names the record type and its writer schema. A writer
schema that is not the current one (an older release under ``schemas/released/``, or a writer
schema registered for a Confluent id) is resolved to the current schema with Avro's resolution
rules, so old records stay readable.

fastavro writes and reads; after a schema's first values its plain records are written and read
by one generated function each (:mod:`schemas.straight_writer`, :mod:`schemas.straight_reader`),
which give fastavro's bytes and records and hand anything else to it.

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
from collections.abc import Mapping
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from fastavro import schemaless_reader, schemaless_writer
from fastavro.read import SchemaResolutionError
from fastavro.schema import load_schema, to_parsing_canonical_form

from schemas.catalog import CATALOG, Catalog, SchemaDirectoryRepository, crc64_avro
from schemas.check import Check, DecodeError, EncodeError, Problem, compile_check
from schemas.straight_reader import StraightReader, compile_straight_reader
from schemas.straight_writer import StraightWriter, compile_straight_writer

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


Bytes = bytes | bytearray | memoryview
"""What :func:`decode` and :func:`peek_name` accept: a Kafka value, or a view of one."""


@dataclass(slots=True)
class _Reader:
    """How to read one writer schema: its record name, writer schema, and reader if resolving."""

    name: str
    writer: dict[str, Any]
    reader: dict[str, Any] | None
    origin: str
    straight: StraightReader | None = None
    """A current schema's straight reader (:mod:`schemas.straight_reader`), written once two
    values of it have been read after the codec's first read (which builds the readers): a
    process that reads one value never writes it."""
    reads: int = 0


class Codec:
    """Single-object encoding over one :class:`Catalog`, plus a Confluent schema-id map."""

    def __init__(self, catalog: Catalog = CATALOG) -> None:
        self.catalog = catalog
        self._writers: dict[str, tuple[str, bytes, dict[str, Any], Check]] = {}
        self._straight: dict[str, StraightWriter] = {}
        """Name (short and full) → its straight writer, written after the name's first encode
        (:mod:`schemas.straight_writer`; a ``sluice submit`` encodes one record, once)."""
        self._all_readers: dict[bytes, _Reader] | None = None
        self._released_added = False
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
        """Fingerprint → reader for every current schema (built on first use); the released
        schemas are added when a fingerprint is not found among them (:meth:`_reader_of`)."""
        if self._all_readers is None:
            self._all_readers = {entry.fingerprint: _Reader(entry.name, entry.parsed, None,
                                                            "current")
                                 for entry in self.catalog.entries()}
        return self._all_readers

    def _reader_of(self, fingerprint: bytes) -> _Reader | None:
        """The reader of the schema with ``fingerprint``: a current one, else a released one.

        The released schemas are parsed at the first fingerprint that is not a current one
        (a process that reads only current values never parses them: 0.07 s at the start of
        ``sluice replay``'s reader); a fingerprint shared by a current and a released version
        reads as the current one."""
        readers = self._readers
        reader = readers.get(fingerprint)
        if reader is None and not self._released_added:
            catalog, released = self.catalog, dict[bytes, _Reader]()
            for entry in catalog.released_entries():  # oldest first: the newest one stays
                if entry.name in catalog.names:
                    released[entry.fingerprint] = _Reader(
                        entry.name, entry.parsed, catalog.entry(entry.name).parsed,
                        f"release {entry.release}")
            for fp, found in released.items():
                readers.setdefault(fp, found)
            self._released_added = True
            reader = readers.get(fingerprint)
        return reader

    # -- encoding -------------------------------------------------------------------------

    def encode(self, name: str, record: Mapping[str, Any]) -> bytes:
        """Encode ``record`` as the current schema of ``name`` in single-object encoding.

        Fields with a default may be omitted (the default is written); fields without one are
        required; unknown fields, wrong types and out-of-range ints are refused with an
        :class:`EncodeError` naming the field. ``name`` is short (``SubmitJob``) or full.
        """
        straight = self._straight.get(name)
        if straight is not None:
            data = straight(record)
            if data is not None:  # the common case, checked and written in one straight line
                return data
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
        if straight is None:
            self._straight_after_first(short_name, header, parsed)
        return buffer.getvalue()

    def _straight_after_first(self, short_name: str, header: bytes,
                              parsed: dict[str, Any]) -> None:
        written = compile_straight_writer(parsed, header) or _not_straight
        self._straight[short_name] = self._straight[parsed["name"]] = written

    # -- decoding -------------------------------------------------------------------------

    def _reader_for(self, data: Bytes) -> tuple[_Reader, int]:
        """Find the writer schema named by the header of ``data``; the body starts at the int."""
        if not isinstance(data, bytes | bytearray | memoryview):  # a tombstone's None
            raise DecodeError(f"no value ({type(data).__name__}): expected C3 01 + fingerprint "
                              "or 00 + schema id")
        if data[:2] == SOE_MAGIC:  # the usual case first: a known fingerprint
            reader = self._reader_of(bytes(data[2:SOE_HEADER_SIZE]))
            if reader is not None:
                return reader, SOE_HEADER_SIZE
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
            reader = self._reader_of(fp)
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
        readers = self._all_readers
        reader = (readers.get(data[2:SOE_HEADER_SIZE]) if readers is not None
                  and type(data) is bytes and data[:2] == SOE_MAGIC else None)
        if reader is None:  # not yet built, another framing or type, or an error to name
            reader, start = self._reader_for(data)
        else:  # the usual case: single-object encoding, a known fingerprint
            straight = reader.straight
            if straight is not None:
                plain = straight(data)  # type: ignore[arg-type]  # bytes: tested above
                if plain is not None:  # read in one straight line; else fastavro says
                    return reader.name, plain
            elif reader.reader is None:
                reader.reads += 1
                if reader.reads == 2:
                    reader.straight = (compile_straight_reader(reader.writer, SOE_HEADER_SIZE)
                                       or _not_straight)
            start = SOE_HEADER_SIZE
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
            reader = self._reader_of(bytes(data[2:SOE_HEADER_SIZE]))
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


def _not_straight(_value: Any) -> None:
    """The straight writer or reader of a schema with a kind :mod:`schemas.straight_writer` or
    :mod:`schemas.straight_reader` does not handle: every value goes to fastavro."""


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


_DEFAULT_CODEC = Codec()
DEFAULT_CODEC = _DEFAULT_CODEC
"""The codec behind the module-level functions (the intake registers registry ids in it)."""
encode = _DEFAULT_CODEC.encode
decode = _DEFAULT_CODEC.decode
peek_name = _DEFAULT_CODEC.peek_name
register_confluent_schema = _DEFAULT_CODEC.register_confluent_schema
unregister_confluent_schema = _DEFAULT_CODEC.unregister_confluent_schema
