"""The generated records (``python -m schemas.codegen``) are current and follow their schemas."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from scheduler.records import (
    COMMAND_NAMES,
    FACT_NAMES,
    INBOX_NAMES,
    RECORD_TYPES,
    REQUEST_NAMES,
    ROLES,
    TYPE_NAMES,
    FactBase,
    as_record,
    from_record,
    record_fields,
)
from schemas import decode, encode
from schemas.catalog import CATALOG
from schemas.codegen import CodegenError, main, stale
from tests.unit.test_schema_compat import sample

ROOT = Path(__file__).resolve().parents[2]


def _copy_repo(tmp: Path) -> Path:
    shutil.copytree(ROOT / "schemas", tmp / "schemas", ignore=shutil.ignore_patterns("released"))
    shutil.copytree(ROOT / "scheduler" / "records", tmp / "scheduler" / "records")
    (tmp / "docs").mkdir()
    for doc in ("records.md", "wire-format.md"):
        shutil.copy(ROOT / "docs" / doc, tmp / "docs" / doc)
    return tmp


def test_the_generated_files_are_current() -> None:
    assert stale(ROOT) == [], "run `python -m schemas.codegen`"


def test_check_mode_names_every_file_a_new_field_makes_stale(tmp_path: Path, capsys: Any) -> None:
    root = _copy_repo(tmp_path)
    path = root / "schemas" / "CancelJob.avsc"
    schema = json.loads(path.read_text())
    schema["fields"].append({"name": "note", "type": "string", "default": "", "doc": "a note"})
    path.write_text(json.dumps(schema, indent=2))
    assert main(["--check", "--root", str(root)]) == 1
    out = capsys.readouterr().out
    for stale_file in ("scheduler/records/requests.py", "scheduler/records/wire_requests.py",
                       "docs/records.md", "docs/wire-format.md"):
        assert f"stale: {stale_file}" in out
    assert "stale: scheduler/records/facts.py" not in out
    assert main(["--root", str(root)]) == 0
    assert main(["--check", "--root", str(root)]) == 0
    assert "note: str = \"\"" in (root / "scheduler/records/requests.py").read_text()


def test_a_generated_file_no_schema_needs_is_stale(tmp_path: Path) -> None:
    root = _copy_repo(tmp_path)
    header = (root / "scheduler/records/names.py").read_text().splitlines()[0]
    (root / "scheduler/records/old.py").write_text(header + "\n")
    assert stale(root) == ["scheduler/records/old.py"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sluice.role": "gossip"}, '"sluice.role" is \'gossip\''),
        ({"fields": [{"name": "class", "type": "string", "doc": "x"}]}, "Python attribute"),
        ({"fields": [{"name": "x", "type": ["int", "string"], "doc": "x"}]}, "unions of null"),
    ],
)
def test_a_schema_the_generator_cannot_translate_is_a_named_error(
    tmp_path: Path, change: dict[str, Any], message: str, capsys: Any
) -> None:
    root = _copy_repo(tmp_path)
    path = root / "schemas" / "HoldJob.avsc"
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with pytest.raises(CodegenError, match=r"HoldJob\.avsc"):
        stale(root)
    assert main(["--check", "--root", str(root)]) == 2
    assert message in capsys.readouterr().err


def test_roles_come_from_the_schemas() -> None:
    for entry in CATALOG.entries():
        assert ROLES[entry.name] == json.loads(entry.json)["sluice.role"]
    assert {"SubmitJob", "CancelJob", "ReportJobExit", "StartStep", "ReportStepExit"} <= (
        REQUEST_NAMES)
    assert {"Tick", "NodeFailed", "NodeResponding", "NodeClockAhead"} == INBOX_NAMES
    assert {"JobSpec", "Segment"} == TYPE_NAMES
    assert {"LaunchRun", "KillRun", "SignalRun", "SetRunLimit", "LaunchStep", "KillStep",
            "RequestRegistration"} == COMMAND_NAMES
    assert all(issubclass(RECORD_TYPES[name], FactBase) for name in FACT_NAMES)


@pytest.mark.parametrize("name", sorted(CATALOG.names))
@pytest.mark.parametrize("full", [True, False], ids=["all-fields", "required-only"])
def test_every_schema_round_trips_through_its_class(name: str, full: bool) -> None:
    entry = CATALOG.entry(name)
    record = sample(entry.parsed, {}, full)
    obj = from_record(name, record)
    assert list(record_fields(type(obj))) == [f["name"] for f in entry.parsed["fields"]]
    got_name, wire = as_record(obj)
    assert got_name == name
    decoded_name, decoded = decode(encode(name, wire))
    assert from_record(decoded_name, decoded) == obj
    assert as_record(from_record(name, wire)) == (name, wire)


def test_bad_records_are_named_errors() -> None:
    with pytest.raises(ValueError, match="unknown record type"):
        from_record("Nope", {})
    with pytest.raises(ValueError, match="lacks required fields"):
        from_record("CancelJob", {"user": "u"})
    with pytest.raises(ValueError, match="must be a mapping"):
        from_record("SubmitJob", {"job_sluid": "s1", "spec": "x"})
    with pytest.raises(ValueError, match="not a record type"):
        as_record(object())


def test_the_package_re_exports_what_the_hand_written_wire_module_exports() -> None:
    import scheduler.records
    from scheduler.records import wire
    from schemas.codegen_package import _WIRE_API

    assert sorted(_WIRE_API) == sorted(wire.__all__)
    assert all(getattr(scheduler.records, name) is getattr(wire, name) for name in wire.__all__)
