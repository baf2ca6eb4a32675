"""Sluice's wire format: the Avro records, their fingerprint catalog, the codec, and SLUIDs.

``encode``/``decode`` speak Avro single-object encoding (``C3 01`` + CRC-64-AVRO fingerprint +
body); ``decode`` also reads Confluent framing for ids registered with
``register_confluent_schema``. See docs/records.md (the contract) and docs/wire-format.md.
"""

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
from schemas.codec import (
    Codec,
    DecodeError,
    EncodeError,
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
