"""Schema compatibility: the current schemas against every frozen release, and against the contract.

Against every release under ``schemas/released/`` (``v1``, ``v2``; full transitive
compatibility):

(a) backward -- data written with the released schema is readable with the current one;
(b) forward -- data written with the current schema is readable with the released one;
(c) every field the release does not have carries a default; no released record disappears.

Against docs/records.md: every record of the contract has a schema with exactly the fields, types,
order and defaults the contract gives.
"""

from __future__ import annotations

import html
import re
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
from fastavro import schemaless_reader, schemaless_writer

from schemas.catalog import CATALOG, NAMED_TYPES, RECORD_NAMES, SchemaEntry

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "records.md"

RELEASED = [
    pytest.param(entry, id=f"{entry.release}-{entry.name}") for entry in CATALOG.released_entries()
]


def test_release_v1_is_frozen_and_every_type_in_it_is_still_current() -> None:
    assert "v1" in CATALOG.releases
    assert set(CATALOG.releases["v1"]) <= set(CATALOG.names)


def test_release_v2_is_frozen_with_every_current_type_and_the_decision_fields() -> None:
    """v2 holds every type of its time; types added since (job steps) are new, not released."""
    assert list(CATALOG.releases)[:2] == ["v1", "v2"]
    # every type of v2 is still current; types added since (job steps; NodeCommandRefused,
    # ReportCommandRefused: issue 13) wait for the next frozen release
    assert set(CATALOG.releases["v2"]) <= set(CATALOG.names)
    assert {"JobSpec", "LaunchRun", "JobStarted", "JobEnded"} <= set(CATALOG.releases["v2"])
    assert {"NodeCommandRefused", "ReportCommandRefused", "StartStep", "StepStarted"} <= (
        set(CATALOG.names) - set(CATALOG.releases["v2"]))
    v2 = {name: [f["name"] for f in entry.parsed["fields"]]
          for name, entry in CATALOG.releases["v2"].items()}
    assert {"job_state", "requeue_reason", "held_nodes", "defer_release"} <= set(v2["JobEnded"])
    assert {"partition", "account", "time_limit_s", "requeue"} <= set(v2["JobQueued"])
    assert {"alloc_cpus", "alloc_mem_mb", "alloc_gpus"} <= set(v2["JobStarted"])


@pytest.mark.parametrize("released", RELEASED)
def test_no_released_type_has_disappeared(released: SchemaEntry) -> None:
    assert released.name in CATALOG.names, f"{released.name} was released and must stay readable"


# -- sample data ---------------------------------------------------------------------------------


def sample(schema: Any, named: dict[str, Any], full: bool) -> Any:
    """A value of ``schema``: every field set to a non-default value if ``full``, else only the
    fields without a default."""
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        return sample(branches[0], named, full) if full or "null" not in schema else None
    if isinstance(schema, str):
        if schema in named:
            return sample(named[schema], named, full)
        primitives = {
            "null": None,
            "boolean": True,
            "int": -7,
            "long": 2**40 + 3,
            "float": 1.5,
            "double": 2.25,
            "string": "žluť ✓",
            "bytes": b"\x00\xff",
        }
        return primitives[schema]
    kind = schema["type"]
    if kind == "record":
        named.setdefault(schema["name"], schema)
        return {
            field["name"]: sample(field["type"], named, full)
            for field in schema["fields"]
            if full or "default" not in field
        }
    if kind == "array":
        return [sample(schema["items"], named, full), sample(schema["items"], named, full)]
    if kind == "map":
        return {"k": sample(schema["values"], named, full)}
    if kind == "enum":
        named.setdefault(schema["name"], schema)
        return schema["symbols"][-1]
    return sample(kind, named, full)


def write(schema: dict[str, Any], record: Any) -> bytes:
    buffer = BytesIO()
    schemaless_writer(buffer, schema, record, strict_allow_default=True)
    return buffer.getvalue()


def read(data: bytes, writer: dict[str, Any], reader: dict[str, Any]) -> Any:
    stream = BytesIO(data)
    record = schemaless_reader(stream, writer, reader)
    assert stream.tell() == len(data), "the reader did not consume the whole body"
    return record


def shared_fields_agree(written: Any, read_back: Any) -> None:
    """Every field both sides know has the same value after resolution."""
    if isinstance(written, dict) and isinstance(read_back, dict):
        for key in written.keys() & read_back.keys():
            shared_fields_agree(written[key], read_back[key])
    elif isinstance(written, list) and isinstance(read_back, list):
        assert len(written) == len(read_back)
        for a, b in zip(written, read_back, strict=True):
            shared_fields_agree(a, b)
    else:
        assert written == read_back


# -- (a) backward and (b) forward ---------------------------------------------------------------


@pytest.mark.parametrize("full", [True, False], ids=["all-fields", "required-only"])
@pytest.mark.parametrize("released", RELEASED)
def test_data_written_with_a_release_is_readable_with_the_current_schema(
    released: SchemaEntry, full: bool
) -> None:
    current = CATALOG.entry(released.name)
    record = sample(released.parsed, {}, full)
    read_back = read(write(released.parsed, record), released.parsed, current.parsed)
    shared_fields_agree(record, read_back)


@pytest.mark.parametrize("full", [True, False], ids=["all-fields", "required-only"])
@pytest.mark.parametrize("released", RELEASED)
def test_data_written_with_the_current_schema_is_readable_with_a_release(
    released: SchemaEntry, full: bool
) -> None:
    current = CATALOG.entry(released.name)
    record = sample(current.parsed, {}, full)
    read_back = read(write(current.parsed, record), current.parsed, released.parsed)
    shared_fields_agree(record, read_back)


# -- (c) new fields have defaults ---------------------------------------------------------------


def record_fields(schema: Any, named: dict[str, Any], out: dict[str, dict[str, Any]]) -> None:
    """Collect ``record full name -> {field name: field}`` of every record inside ``schema``."""
    if isinstance(schema, list):
        for branch in schema:
            record_fields(branch, named, out)
    elif isinstance(schema, str):
        if schema in named and schema not in out:
            record_fields(named[schema], named, out)
    elif schema["type"] == "record":
        named.setdefault(schema["name"], schema)
        out[schema["name"]] = {field["name"]: field for field in schema["fields"]}
        for field in schema["fields"]:
            record_fields(field["type"], named, out)
    elif schema["type"] == "array":
        record_fields(schema["items"], named, out)
    elif schema["type"] == "map":
        record_fields(schema["values"], named, out)


@pytest.mark.parametrize("released", RELEASED)
def test_every_field_added_since_a_release_has_a_default(released: SchemaEntry) -> None:
    old: dict[str, dict[str, Any]] = {}
    new: dict[str, dict[str, Any]] = {}
    record_fields(released.parsed, {}, old)
    record_fields(CATALOG.entry(released.name).parsed, {}, new)
    for record_name, fields in new.items():
        for field_name, field in fields.items():
            if field_name not in old.get(record_name, fields):
                assert "default" in field, (
                    f"{record_name}.{field_name} is not in release {released.release}: "
                    "it needs a default"
                )
    for record_name, fields in old.items():
        for field_name, field in fields.items():
            if record_name in new and field_name not in new[record_name]:
                assert "default" in field, (
                    f"{record_name}.{field_name} was removed but has no default in release "
                    f"{released.release}: readers of that release cannot read new data"
                )


# -- the contract in docs/records.md --------------------------------------------------------------

COMMON_FACT_FIELDS = [
    ("event_sluid", "string", None),
    ("shard", "string", None),
    ("shard_seq", "long", None),
    ("time_ms", "long", None),
]
FIELD_SPEC = re.compile(
    r"^(?P<name>\w+)(?::\s*(?P<type>[\w<>]+))?(?:\s*=\s*(?P<default>\S+))?(?:\s*\(.*\))?$",
    re.DOTALL,
)
Field = tuple[str, str, Any]
"""(name, type as ``string``/``array<string>``/``JobSpec``…, default or None for none)."""


def _split_top_level(text: str) -> list[str]:
    """Split a field list on the commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()] if current.strip() else parts


def _default(text: str | None) -> Any:
    """The contract's spelling of a default as a value; ``None`` when there is none."""
    if not text:
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    return {'""': "", "false": False, "true": True, "[]": [], "{}": {}}[text]


def parse_field_list(text: str) -> list[Field]:
    fields = []
    for part in _split_top_level(html.unescape(text).replace("`", "")):
        match = FIELD_SPEC.match(part)
        assert match, f"cannot read the contract's field {part!r}"
        # Conventions of the contract: untyped fields are strings, but `_ms`/`_s` ones are longs.
        untyped = "long" if match["name"].endswith(("_ms", "_s")) else "string"
        fields.append((match["name"], match["type"] or untyped, _default(match["default"])))
    return fields


def contract_records() -> dict[str, list[Field]]:
    """Every record of docs/records.md, from its tables, with the facts' common four fields."""
    records: dict[str, list[Field]] = {}
    section = ""
    for line in CONTRACT.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line
        cells = (
            [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        )
        if len(cells) == 2 and re.fullmatch(r"[A-Z]\w+", cells[0]):
            common = COMMON_FACT_FIELDS if section.startswith("## Facts") else []
            records[cells[0]] = common + parse_field_list(cells[1])
        elif len(cells) == 4 and re.fullmatch(r"[a-z_]+", cells[0]) and cells[0] != "field":
            records.setdefault("JobSpec", []).append(
                (cells[0], html.unescape(cells[1]), _default(cells[2]))
            )
    # Described in prose rather than tables:
    records["Segment"] = [("index", "int", None), ("group", "string", None)]
    records["Segment"].append(("nodes", "array<string>", None))
    records["NodeHeartbeat"] = [
        ("node_sluid", "string", None),
        ("name", "string", None),
        ("time_ms", "long", None),
        ("runs", "array<string>", None),
        ("exited", "array<string>", []),
        ("paused", "string", ""),
    ]
    records["DeadLetter"] = [
        ("source_topic", "string", None),
        ("partition", "int", None),
        ("offset", "long", None),
        ("key", "bytes or null", None),
        ("value", "bytes", None),
        ("error", "string", None),
        ("time_ms", "long", None),
    ]
    return records


def _type_text(avro_type: Any) -> str:
    """The contract's spelling of a type: ``string``, ``array<Segment>``, ``bytes or null``."""
    if isinstance(avro_type, list):
        return " or ".join(sorted(_type_text(t) for t in avro_type))
    if isinstance(avro_type, str):
        return avro_type.removeprefix("sluice.")
    kind = avro_type["type"]
    if kind == "array":
        return f"array<{_type_text(avro_type['items'])}>"
    if kind == "map":
        return f"map<{_type_text(avro_type['values'])}>"
    return _type_text(avro_type["name"])


CONTRACT_RECORDS = contract_records()


def test_the_contract_lists_every_schema_and_nothing_else_but_close_cycle() -> None:
    assert set(CONTRACT_RECORDS) - {"CloseCycle"} == set(RECORD_NAMES) | set(NAMED_TYPES)


@pytest.mark.parametrize("name", sorted(set(CONTRACT_RECORDS) - {"CloseCycle"}))
def test_each_schema_has_exactly_the_contracts_fields_types_and_defaults(name: str) -> None:
    schema = CATALOG.entry(name).parsed
    actual = [(f["name"], _type_text(f["type"]), f.get("default")) for f in schema["fields"]]
    assert actual == CONTRACT_RECORDS[name]
    assert schema["name"] == f"sluice.{name}"
    assert schema.get("doc"), f"{name} needs a doc string"
    assert all(f.get("doc") for f in schema["fields"]), f"every field of {name} needs a doc"


@pytest.mark.parametrize("name", [*RECORD_NAMES, *NAMED_TYPES])
def test_time_and_duration_fields_are_longs(name: str) -> None:
    for field in CATALOG.entry(name).parsed["fields"]:
        if field["name"].endswith(("_ms", "_s")):  # a time, or a list of times (longs too)
            assert field["type"] in ("long", {"type": "array", "items": "long"}), \
                f"{name}.{field['name']} must be a long"


# -- a landed version's values decode: each landed version's schemas are a frozen release --------


@pytest.mark.parametrize("released", [
    p for p in RELEASED if p.values[0].name not in NAMED_TYPES])  # (a named type is no value)
def test_a_value_written_by_a_release_is_decoded_by_this_codec(released: SchemaEntry) -> None:
    """What an older worker, node daemon or client wrote (ledgers, heartbeats, requests) reads
    after an upgrade: its fingerprint is known and its body resolves to the current schema."""
    from schemas import codec

    record = sample(released.parsed, {}, False)
    value = b"\xc3\x01" + released.fingerprint + write(released.parsed, record)
    name, decoded = codec.decode(value)
    assert name == released.name
    shared_fields_agree(record, decoded)


def test_the_last_landed_versions_schemas_are_frozen() -> None:
    """Stop 33's (2026-12-06, release v4), stop 37's (v5), stop 38's (v6: job steps'
    StepPending, sshare's records), stop 39's (v7: JobDetailsChanged), stop 40's (v8:
    JobStarted.priority, JobDetailsChanged.nice/requeue) and stop 41's (v9) schemas are
    releases: a ledger, daemon or client of each is read by this code."""
    assert {"v4", "v5", "v6", "v7", "v8", "v9"} <= set(CATALOG.releases)
    assert set(CATALOG.releases["v6"]) | {"JobDetailsChanged"} == set(CATALOG.names)
    assert set(CATALOG.releases["v7"]) == set(CATALOG.releases["v8"])
    assert set(CATALOG.releases["v8"]) == set(CATALOG.releases["v9"])
    assert set(CATALOG.releases["v9"]) | NEW_SINCE_V9 == set(CATALOG.names)


def test_release_v9_is_what_stop_41_landed() -> None:
    """v9 (2026-12-07, stop 41): JobSpec.admin_comment/extra, JobDetailsChanged.admin_comment/
    extra, RequestRegistration.refused; no record added."""
    assert "v9" in CATALOG.releases


NEW_SINCE_V9: frozenset[str] = frozenset()
"""Records added since v9, in no release yet (frozen as the next release when it lands)."""
