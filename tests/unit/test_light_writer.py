"""schemas.writer (the light processes' fastavro-free encoder) writes every record of the light
set (requests, commands, heartbeats, dead letters) exactly as the codec does: the same bytes for
any valid record, the same EncodeError (message and field) for any invalid one, and the codec
for every other record."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.records import (
    COMMAND_NAMES,
    DEAD_LETTER_NAMES,
    HEARTBEAT_NAMES,
    REQUEST_NAMES,
)
from schemas import EncodeError, codec, writer
from schemas.catalog import CATALOG
from schemas.light_schemas import NAMED_TYPES, SCHEMAS

TEXT = st.text(max_size=8)
ODD = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(),
                TEXT, st.binary(max_size=4), st.lists(st.integers(), max_size=2),
                st.dictionaries(TEXT, st.integers(), max_size=2),
                st.text(alphabet="\ud800\udfff", min_size=1, max_size=2))
"""Any value, valid or not for a given field (surrogates make strings unencodable)."""


def values(schema: Any, named: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Valid values of a fastavro-parsed schema, with optional fields sometimes left out."""
    if isinstance(schema, list):
        return st.one_of(*(values(branch, named) for branch in schema))
    if isinstance(schema, str):
        if schema in named:
            return named[schema]
        return {"null": st.none(), "boolean": st.booleans(), "string": TEXT,
                "bytes": st.binary(max_size=6), "int": st.integers(-(2**31), 2**31 - 1),
                "long": st.integers(-(2**63), 2**63 - 1)}[schema]
    kind = schema["type"]
    if kind == "array":
        return st.lists(values(schema["items"], named), max_size=3)
    if kind == "map":
        return st.dictionaries(TEXT, values(schema["values"], named), max_size=3)
    if kind == "record":
        named[schema["name"]] = st.deferred(lambda: record)
        required = {f["name"]: values(f["type"], named) for f in schema["fields"]
                    if "default" not in f}
        optional = {f["name"]: values(f["type"], named) for f in schema["fields"]
                    if "default" in f}
        record = st.fixed_dictionaries(required, optional=optional)
        return record
    return values(kind, named)


def named_values() -> dict[str, Any]:
    """Strategies for the nested named types, each after the types it uses."""
    named: dict[str, Any] = {}
    for full_name, schema in NAMED_TYPES.items():
        named[full_name] = values(schema, named)
    return named


def outcome(encode: Any, name: str, record: Any) -> Any:
    try:
        return encode(name, record)
    except EncodeError as error:
        return "EncodeError", str(error), error.field


def test_every_light_record_has_its_current_schema_and_header() -> None:
    light = {*REQUEST_NAMES, *COMMAND_NAMES, *HEARTBEAT_NAMES, *DEAD_LETTER_NAMES}
    assert set(SCHEMAS) == light
    assert {"LaunchRun", "NodeHeartbeat", "DeadLetter", "SubmitJob"} <= light
    assert set(NAMED_TYPES) == {"sluice.JobSpec", "sluice.Segment"}
    for name, (header, schema) in SCHEMAS.items():
        entry = CATALOG.entry(name)
        assert header == b"\xc3\x01" + entry.fingerprint
        assert schema["name"] == entry.full_name


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_valid_request_is_written_as_the_codec_writes_it(name: str, data: st.DataObject) -> None:
    record = data.draw(values(SCHEMAS[name][1], named_values()))
    assert outcome(writer.encode, name, record) == outcome(codec.encode, name, record)
    assert outcome(writer.encode, f"sluice.{name}", record) == outcome(codec.encode, name, record)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_an_invalid_request_gets_the_codecs_error(name: str, data: st.DataObject) -> None:
    record = dict(data.draw(values(SCHEMAS[name][1], named_values())))
    fields = [f["name"] for f in SCHEMAS[name][1]["fields"]]
    spoilt = data.draw(st.sampled_from([*fields, "no_such_field"]))
    if data.draw(st.booleans()) and spoilt in record:
        del record[spoilt]
    else:
        record[spoilt] = data.draw(ODD)
    assert outcome(writer.encode, name, record) == outcome(codec.encode, name, record)


def test_a_nested_error_names_the_same_path() -> None:
    record = {"job_sluid": "s", "spec": {"user": "u", "command": ["true"],
                                         "env": {"A": 1}}}
    assert outcome(writer.encode, "SubmitJob", record) == outcome(codec.encode, "SubmitJob", record)
    assert "SubmitJob.spec.env['A']" in str(outcome(writer.encode, "SubmitJob", record))


def test_a_record_that_is_not_a_light_one_goes_to_the_codec() -> None:
    assert "JobQueued" not in SCHEMAS
    with pytest.raises(EncodeError, match="unknown record name 'Nope'"):
        writer.encode("Nope", {})
    tick = {"shard": "s0", "time_ms": 1}
    assert outcome(writer.encode, "Tick", tick) == outcome(codec.encode, "Tick", tick)
