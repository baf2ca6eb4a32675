"""Sluice's wire format: the Avro records, their fingerprint catalog, the codec, and SLUIDs.

``encode``/``decode`` speak Avro single-object encoding (``C3 01`` + CRC-64-AVRO fingerprint +
body); ``decode`` also reads Confluent framing for ids registered with
``register_confluent_schema``. See docs/records.md (the contract) and docs/wire-format.md.

The names load their module when first used (PEP 562): ``from schemas import SluidGenerator``
or ``schemas.ranges`` does not load fastavro and the catalog (a third of a CLI call, issue 17).
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Any

    from schemas.catalog import (
        NAMED_TYPES,
        RECORD_NAMES,
        Catalog,
        SchemaEntry,
        canonical_json,
        crc64_avro,
        fingerprint,
        load_avsc,
        name_for_fingerprint,
        parsed_schema,
        schema,
        schema_json,
    )
    from schemas.check import DecodeError, EncodeError
    from schemas.codec import (
        Codec,
        decode,
        encode,
        peek_name,
        register_confluent_schema,
        unregister_confluent_schema,
    )
    from schemas.sluid import (
        DecodedSluid,
        InvalidSluidError,
        SluidClock,
        SluidGenerator,
        format_sluid,
        mint,
        parse_sluid,
    )
    from schemas.sluid import decode as decode_sluid

_CATALOG = ("NAMED_TYPES", "RECORD_NAMES", "Catalog", "SchemaEntry", "canonical_json",
            "crc64_avro", "fingerprint", "load_avsc", "name_for_fingerprint", "parsed_schema",
            "schema", "schema_json")
_CODEC = ("Codec", "decode", "encode", "peek_name", "register_confluent_schema",
          "unregister_confluent_schema")
_SLUID = ("DecodedSluid", "InvalidSluidError", "SluidClock", "SluidGenerator", "format_sluid",
          "mint", "parse_sluid")
_HOME: dict[str, tuple[str, str]] = {
    **{name: ("schemas.catalog", name) for name in _CATALOG},
    **{name: ("schemas.codec", name) for name in _CODEC},
    **{name: ("schemas.sluid", name) for name in _SLUID},
    "DecodeError": ("schemas.check", "DecodeError"),
    "EncodeError": ("schemas.check", "EncodeError"),
    "decode_sluid": ("schemas.sluid", "decode"),
}

__all__ = [
    "NAMED_TYPES",
    "RECORD_NAMES",
    "Catalog",
    "Codec",
    "DecodeError",
    "DecodedSluid",
    "EncodeError",
    "InvalidSluidError",
    "SchemaEntry",
    "SluidClock",
    "SluidGenerator",
    "canonical_json",
    "crc64_avro",
    "decode",
    "decode_sluid",
    "encode",
    "fingerprint",
    "format_sluid",
    "load_avsc",
    "mint",
    "name_for_fingerprint",
    "parse_sluid",
    "parsed_schema",
    "peek_name",
    "register_confluent_schema",
    "schema",
    "schema_json",
    "unregister_confluent_schema",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'schemas' has no attribute {name!r}")
    value = getattr(import_module(home[0]), home[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
