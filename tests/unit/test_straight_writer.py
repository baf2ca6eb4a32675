"""A record's check and Avro body in one straight line (``schemas.straight_writer``): the codec
gives the same bytes, and the same ``EncodeError`` for what it refuses, as the check followed by
fastavro, for every record of the catalog as sampled, with values of every size, and with each
field broken in each way, missing, or an unknown field added."""

from __future__ import annotations

from io import BytesIO
from typing import Any

import pytest
from fastavro import schemaless_writer

from schemas.catalog import CATALOG
from schemas.codec import SOE_MAGIC, Codec
from schemas.straight_writer import compile_straight_writer
from tests.unit.test_check_straight import WRONG, Text
from tests.unit.test_schema_compat import sample

ODD: tuple[Any, ...] = (0, 63, 64, -64, -65, 2**31 - 1, -(2**31), 2**62, -(2**63), 2**63 - 1,
                        2**63, "", "a" * 63, "é" * 40, "x" * 300, "\ud800", False, b"", b"y" * 70,
                        ["a"] * 70, ("a", "b"), {"k" * 70: "v" * 64, "": ""}, {"k": 1}, [1])


def _fastavro(name: str, record: Any) -> bytes:
    entry = CATALOG.entry(name)
    body = BytesIO()
    schemaless_writer(body, entry.parsed, record, strict_allow_default=True)
    return SOE_MAGIC + entry.fingerprint + body.getvalue()


def _outcome(codec: Codec, name: str, record: Any) -> tuple[str, Any]:
    try:
        return "bytes", codec.encode(name, record)
    except Exception as error:  # the kind and the words are what is compared
        return type(error).__name__, str(error)


def _codecs(name: str) -> tuple[Codec, Codec]:
    """A codec whose straight writer of ``name`` is written (two encodes), and one that never
    writes any (the check and fastavro only)."""
    straight, plain = Codec(), Codec()
    plain._straight_after_first = lambda *_a: None  # type: ignore[method-assign]
    record = sample(CATALOG.entry(name).parsed, {}, True)
    straight.encode(name, record)
    assert straight._straight.get(name) is not None
    return straight, plain


@pytest.mark.parametrize("name", sorted(CATALOG.names))
def test_every_record_of_the_catalog_has_a_straight_writer_giving_fastavros_bytes(
        name: str) -> None:
    entry = CATALOG.entry(name)
    write = compile_straight_writer(entry.parsed, SOE_MAGIC + entry.fingerprint)
    assert write is not None
    record = sample(entry.parsed, {}, True)
    assert write(record) == _fastavro(name, record)
    short = sample(entry.parsed, {}, False)
    if len(short) < len(entry.parsed["fields"]):  # a field left to its default: fastavro's
        assert write(short) is None


@pytest.mark.parametrize("name", sorted(CATALOG.names))
def test_the_codec_answers_as_the_check_and_fastavro_for_every_value(name: str) -> None:
    straight, plain = _codecs(name)
    record = sample(CATALOG.entry(name).parsed, {}, True)
    tried = 0
    for field in record:
        for value in (*WRONG, *ODD, Text("y")):
            changed = {**record, field: value}
            assert _outcome(straight, name, changed) == _outcome(plain, name, changed), (
                field, value)
            tried += 1
        missing = {k: v for k, v in record.items() if k != field}
        assert _outcome(straight, name, missing) == _outcome(plain, name, missing), field
    extra = {**record, "colour": "red"}
    assert _outcome(straight, name, extra) == _outcome(plain, name, extra)
    assert _outcome(straight, name, extra)[0] == "EncodeError"
    assert tried == len(record) * (len(WRONG) + len(ODD) + 1)


def test_nested_records_arrays_and_maps_are_written_as_fastavro_writes_them() -> None:
    straight, plain = _codecs("JobQueued")
    record = sample(CATALOG.entry("JobQueued").parsed, {}, True)
    spec = record["spec"]
    for field in spec:
        for value in (*ODD, *WRONG):
            changed = {**record, "spec": {**spec, field: value}}
            got = _outcome(straight, "JobQueued", changed)
            assert got == _outcome(plain, "JobQueued", changed), (field, value)
            if got[0] == "bytes":
                assert got[1] == _fastavro("JobQueued", changed)


def test_the_straight_writer_is_written_after_the_first_encode() -> None:
    codec = Codec()
    record = sample(CATALOG.entry("JobPending").parsed, {}, True)
    assert "JobPending" not in codec._straight  # a CLI's one record: the check and fastavro
    first = codec.encode("JobPending", record)
    written = codec._straight["JobPending"]
    assert codec._straight["sluice.JobPending"] is written
    assert codec.encode("sluice.JobPending", record) == first == written(record)


@pytest.mark.parametrize("value", [0.0, -0.0, 1.5, 1e308, 5e-324, float("inf"), float("-inf"),
                                   float("nan"), 1 / 3])
def test_a_double_is_written_as_fastavro_writes_it(value: float) -> None:
    """sshare's answer (``SharesComputed``) is lists of doubles, an infinite Level FS among
    them: eight little-endian IEEE 754 bytes each, as fastavro's."""
    record = sample(CATALOG.entry("SharesComputed").parsed, {}, True)
    record["level_fs"] = [value, 2.0]
    entry = CATALOG.entry("SharesComputed")
    write = compile_straight_writer(entry.parsed, SOE_MAGIC + entry.fingerprint)
    assert write is not None
    assert write(record) == _fastavro("SharesComputed", record)


def test_a_whole_number_given_for_a_double_goes_the_codecs_way() -> None:
    entry = CATALOG.entry("SharesComputed")
    write = compile_straight_writer(entry.parsed, SOE_MAGIC + entry.fingerprint)
    assert write is not None
    record = sample(entry.parsed, {}, True)
    record["norm_shares"] = [1]
    assert write(record) is None
    assert Codec().encode("SharesComputed", record) == _fastavro("SharesComputed", record)
