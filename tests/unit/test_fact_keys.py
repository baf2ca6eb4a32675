"""The Kafka key of a fact: the SLUID of what it is about (``agents.shard_runner.subject_of``)."""

from __future__ import annotations

from pathlib import Path

from agents.shard_runner import row_keys, subject_of
from scheduler import as_record, from_record
from schemas.sluid import compose, format_sluid
from tests.logs.regenerate import read

JOB = format_sluid(compose(2, 1_780_000_000_000, 7))


def test_a_job_fact_is_keyed_by_its_job() -> None:
    assert subject_of({"shard": "shard-0", "job_sluid": JOB}) == JOB


def test_a_denial_is_keyed_by_the_subject_its_request_named() -> None:
    denial = {"shard": "shard-0", "request": "CancelJob", "subject_sluid": JOB}
    assert subject_of(denial) == JOB


def test_a_denial_naming_garbage_or_nothing_is_keyed_by_the_shard() -> None:
    assert subject_of({"shard": "shard-0", "subject_sluid": "x" * 5000}) == "shard-0"
    assert subject_of({"shard": "shard-0", "subject_sluid": ""}) == "shard-0"


def test_the_rows_a_fact_changed_are_read_as_as_record_gives_them() -> None:
    """``row_keys`` reads the fields ``_persist`` needs off the fact object; for every fact of
    the golden logs they are what ``as_record`` (the wire dict) says, so the same rows are
    written."""
    seen: set[str] = set()
    for path in sorted((Path(__file__).parents[1] / "logs").glob("*.jsonl")):
        for line in read(path):
            if "fact" not in line:
                continue
            fact = from_record(line["fact"]["name"], line["fact"]["body"])
            name, body = as_record(fact)
            got_name, got = row_keys(fact)
            assert got_name == name
            assert got == {k: body[k] for k in ("job_sluid", "node_sluid", "name") if k in body}
            seen.add(name)
    assert {"JobQueued", "JobStarted", "NodeRegistered", "NodeStateChanged"} <= seen
