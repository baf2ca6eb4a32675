"""schemas.reader (a node daemon's fastavro-free decoder) reads every record of the light set
exactly as the codec does: the same record for any value the codec encodes, and for any
corrupted, truncated or extended value the codec's own answer (record or DecodeError, word for
word); anything it does not read itself goes to the codec."""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import DecodeError, codec, reader
from schemas.light_schemas import SCHEMAS
from tests.unit.test_light_writer import named_values, values


def outcome(decode: Any, data: bytes) -> Any:
    """The record, or the error's words (fastavro names its stream object by address)."""
    try:
        return decode(data)
    except DecodeError as error:
        return "DecodeError", re.sub(r" at 0x[0-9a-f]+", "", str(error))


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_valid_record_reads_as_the_codec_reads_it(name: str, data: st.DataObject) -> None:
    record = data.draw(values(SCHEMAS[name][1], named_values()))
    value = codec.encode(name, record)
    assert reader.decode(value) == codec.decode(value)
    assert reader.decode(memoryview(value)) == codec.decode(value)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_a_corrupted_value_gets_the_codecs_answer(name: str, data: st.DataObject) -> None:
    value = bytearray(codec.encode(name, data.draw(values(SCHEMAS[name][1], named_values()))))
    how = data.draw(st.sampled_from(["flip", "cut", "extend", "splice"]))
    at = data.draw(st.integers(10, max(10, len(value) - 1)))
    if how == "flip" and at < len(value):
        value[at] = data.draw(st.integers(0, 255))
    elif how == "cut":
        del value[at:]
    elif how == "extend":
        value += data.draw(st.binary(min_size=1, max_size=4))
    else:
        value[at:at] = data.draw(st.binary(min_size=1, max_size=12))
    assert outcome(reader.decode, bytes(value)) == outcome(codec.decode, bytes(value))


@pytest.mark.parametrize("value", [
    b"", b"\xc3", b"\xc3\x02" + bytes(8), b"\xc3\x01" + bytes(8), b"\x00\x00\x00\x00\x07",
    b"junk", b"\xc3\x01" + bytes(4),
])
def test_a_bad_header_gets_the_codecs_error(value: bytes) -> None:
    assert outcome(reader.decode, value) == outcome(codec.decode, value)
    assert outcome(reader.decode, value)[0] == "DecodeError"


def test_a_long_of_more_than_64_bits_gets_the_codecs_answer() -> None:
    """A 10-byte varint whose last byte is above 1 holds more than 64 bits (hypothesis found
    a corrupted LaunchRun whose job_id read as 9223372326765608993 here)."""
    heartbeat = {"node_sluid": "n", "name": "n1", "time_ms": 1, "runs": [], "exited": [],
                 "paused": ""}
    value = codec.encode("NodeHeartbeat", heartbeat)
    head, tail = value[:-4], value[-3:]  # time_ms (1 → 0x02), then runs, exited and paused
    assert value[-4] == 0x02
    for last in (0x01, 0x02, 0x7F):
        spoilt = head + b"\xff" * 9 + bytes([last]) + tail
        assert outcome(reader.decode, spoilt) == outcome(codec.decode, spoilt)


def test_a_record_outside_the_light_set_is_read_by_the_codec() -> None:
    value = codec.encode("Tick", {"shard": "s0", "time_ms": 7})
    assert reader.decode(value) == ("Tick", {"shard": "s0", "time_ms": 7})


def test_a_huge_block_count_is_not_looped_over() -> None:
    heartbeat = {"node_sluid": "n", "name": "n1", "time_ms": 1, "runs": [], "exited": [],
                 "paused": ""}
    value = codec.encode("NodeHeartbeat", heartbeat)
    assert value[-2:] == b"\0\0"  # the exited array's closing empty block, an empty paused
    assert reader.decode(value) == ("NodeHeartbeat", heartbeat)
    # a block count of 2**62 with no items after it: refused at once, in the codec's words
    spoilt = value[:-2] + b"\xfe\xff\xff\xff\xff\xff\xff\xff\x7f"
    assert outcome(reader.decode, spoilt) == outcome(codec.decode, spoilt)
    assert outcome(reader.decode, spoilt)[0] == "DecodeError"


def test_reading_a_command_loads_no_fastavro() -> None:
    import subprocess

    code = ("import sys\nfrom schemas import reader, writer\n"
            "v = writer.encode('KillRun', {'job_sluid': 'j1', 'run_sluid': 'r1',"
            " 'node_sluid': 'n1', 'node_name': 'a', 'reason': '', 'issued_ms': 1})\n"
            "print(reader.decode(v)[0], 'fastavro' in sys.modules,"
            " 'schemas.catalog' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["KillRun", "False", "False"]
