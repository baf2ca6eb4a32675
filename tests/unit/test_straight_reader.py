"""A single-object value read in one straight line (``schemas.straight_reader``): the codec
gives the same record (the same fields in the same order), and the same ``DecodeError`` for
what it cannot read, as fastavro, for every record of the catalog as sampled, with values of
every size, cut short at every byte, with bytes changed and with bytes after the body."""

from __future__ import annotations

import re
from io import BytesIO
from typing import Any

import pytest
from fastavro import schemaless_writer

from schemas.catalog import CATALOG
from schemas.codec import SOE_HEADER_SIZE, SOE_MAGIC, Codec
from tests.unit.test_schema_compat import sample

BYTES = (0x00, 0x01, 0x02, 0x03, 0x04, 0x7F, 0x80, 0xC0, 0xFF)


def _outcome(codec: Codec, data: bytes) -> tuple[str, Any]:
    try:
        name, record = codec.decode(data)
    except Exception as error:  # the kind and the words are what is compared
        return type(error).__name__, re.sub(r" at 0x[0-9a-f]+", "", str(error))  # BytesIO's
    return name, (record, list(record))


def _codecs(name: str) -> tuple[Codec, Codec]:
    """A codec whose straight reader of ``name`` is written (three reads), and one that has
    none (fastavro only)."""
    straight, plain = Codec(), Codec()
    value = straight.encode(name, sample(CATALOG.entry(name).parsed, {}, True))
    for _ in range(3):
        straight.decode(value)
    assert straight._readers[CATALOG.entry(name).fingerprint].straight is not None
    for reader in plain._readers.values():
        reader.straight = lambda _data: None
    return straight, plain


def _value(name: str, record: Any) -> bytes:
    entry = CATALOG.entry(name)
    body = BytesIO()
    schemaless_writer(body, entry.parsed, record, strict_allow_default=True)
    return SOE_MAGIC + entry.fingerprint + body.getvalue()


@pytest.mark.parametrize("name", sorted(CATALOG.names))
def test_the_codec_reads_every_record_as_fastavro_does_whole_cut_or_changed(name: str) -> None:
    straight, plain = _codecs(name)
    for full in (True, False):
        value = _value(name, sample(CATALOG.entry(name).parsed, {}, full))
        whole = _outcome(straight, value)
        assert whole == _outcome(plain, value) and whole[0] == name
        for cut in range(SOE_HEADER_SIZE, len(value)):
            assert _outcome(straight, value[:cut]) == _outcome(plain, value[:cut]), cut
        for at in range(SOE_HEADER_SIZE, len(value)):
            for byte in BYTES:
                changed = value[:at] + bytes([byte]) + value[at + 1:]
                assert _outcome(straight, changed) == _outcome(plain, changed), (at, byte)
        for tail in (b"\x00", b"\x80\x01", b"x" * 9):
            assert _outcome(straight, value + tail) == _outcome(plain, value + tail)
            assert _outcome(straight, value + tail)[0] == "DecodeError"


def test_values_of_every_size_read_as_fastavro_reads_them() -> None:
    straight, plain = _codecs("JobQueued")
    record = sample(CATALOG.entry("JobQueued").parsed, {}, True)
    spec = record["spec"]
    values: dict[str, tuple[Any, ...]] = {
        "job_id": (0, 63, 64, -64, -65, 2**31 - 1, -(2**31), 2**62, -(2**63), 2**63 - 1),
        "partition": ("", "a" * 63, "é" * 40, "x" * 300),
    }
    spec_values: dict[str, tuple[Any, ...]] = {
        "command": ([], ["a"] * 70, ["", "ž" * 100]),
        "env": ({}, {"k" * 70: "v" * 64, "": ""}, {str(i): str(i) for i in range(100)}),
        "nodes_min": (0, 1, -1, 2**31 - 1, -(2**31)),
        "exclusive": (False, True),
    }
    cases = [{**record, field: value} for field, options in values.items() for value in options]
    cases += [{**record, "spec": {**spec, field: value}}
              for field, options in spec_values.items() for value in options]
    for case in cases:
        value = _value("JobQueued", case)
        got = _outcome(straight, value)
        assert got == _outcome(plain, value) and got[1][0] == case


def test_blocks_with_a_size_and_long_varints_go_to_fastavro() -> None:
    """An array written as a negative count and a byte size (legal Avro, never written by
    fastavro), and a long written in more bytes than it needs: fastavro reads both."""
    straight, plain = _codecs("JobPending")
    record = sample(CATALOG.entry("JobPending").parsed, {}, True)
    value = _value("JobPending", record)
    entry = CATALOG.entry("JobPending")
    first = entry.parsed["fields"][0]
    assert first["type"] == "string"  # event_sluid: re-write its length in 10 bytes
    length = value[SOE_HEADER_SIZE]
    padded = (value[:SOE_HEADER_SIZE] + bytes([length | 0x80] + [0x80] * 8 + [0x00])
              + value[SOE_HEADER_SIZE + 1:])
    assert _outcome(straight, padded) == _outcome(plain, padded)
    assert _outcome(straight, padded)[0] == "JobPending"
    overflow = value[:SOE_HEADER_SIZE] + bytes([0xFF] * 10 + [0x01]) + value[SOE_HEADER_SIZE:]
    assert _outcome(straight, overflow) == _outcome(plain, overflow)


def test_the_straight_reader_is_written_on_the_third_value() -> None:
    codec = Codec()
    value = codec.encode("JobPending", sample(CATALOG.entry("JobPending").parsed, {}, True))
    first = codec.decode(value)  # builds the readers
    reader = codec._readers[CATALOG.entry("JobPending").fingerprint]
    assert reader.straight is None  # a CLI's one value: fastavro only
    assert codec.decode(value) == first and reader.straight is None
    assert codec.decode(value) == first and reader.straight is not None
    assert codec.decode(value) == first == ("JobPending", reader.straight(value))
    assert codec.decode(bytearray(value)) == first  # not bytes: fastavro
