"""The Kafka key of a fact: the SLUID of what it is about (``agents.shard_runner.subject_of``)."""

from __future__ import annotations

from agents.shard_runner import subject_of
from schemas.sluid import compose, format_sluid

JOB = format_sluid(compose(2, 1_780_000_000_000, 7))


def test_a_job_fact_is_keyed_by_its_job() -> None:
    assert subject_of({"shard": "shard-0", "job_sluid": JOB}) == JOB


def test_a_denial_is_keyed_by_the_subject_its_request_named() -> None:
    denial = {"shard": "shard-0", "request": "CancelJob", "subject_sluid": JOB}
    assert subject_of(denial) == JOB


def test_a_denial_naming_garbage_or_nothing_is_keyed_by_the_shard() -> None:
    assert subject_of({"shard": "shard-0", "subject_sluid": "x" * 5000}) == "shard-0"
    assert subject_of({"shard": "shard-0", "subject_sluid": ""}) == "shard-0"
