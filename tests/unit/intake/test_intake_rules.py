"""The intake's contract checks and dead letters, without a broker."""

from __future__ import annotations

import tracemalloc
from dataclasses import dataclass, field
from typing import Any

from agents.forwarding import dead_letter, record_size
from agents.intake_rules import IntakeRules, Refusal
from scheduler.records import REQUEST_NAMES as REQUESTS
from schemas import SluidGenerator, decode, encode
from streams.dead_letters import DEAD_LETTER_MAX_BYTES, dead_letter_value
from streams.partitioner import partition_for
from streams.settings import Settings

SETTINGS = Settings(partitions=6, max_request_bytes=10_000)
RULES = IntakeRules(SETTINGS, REQUESTS)
SLUIDS = SluidGenerator(2)


@dataclass
class Message:
    key: bytes | None
    value: bytes
    partition: int
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    topic: str = "t.requests"
    offset: int = 7


def submit(sluid: str, **spec: Any) -> bytes:
    body = {"user": "alice", "command": ["true"], "workdir": "/home/alice", **spec}
    return encode("SubmitJob", {"job_sluid": sluid, "spec": body})


def on_its_partition(key: bytes, value: bytes, **kw: Any) -> Message:
    return Message(key, value, partition_for(key, SETTINGS.partitions), **kw)


def test_a_well_formed_submission_is_forwarded() -> None:
    sluid = SLUIDS.new()
    verdict = RULES.classify(on_its_partition(sluid.encode(), submit(sluid)))
    assert isinstance(verdict, tuple)
    assert verdict[0] == "SubmitJob"


def refusal(verdict: object) -> str:
    assert isinstance(verdict, Refusal), verdict
    assert verdict.name == "SubmitJob"
    return verdict.reason


def test_a_key_that_is_not_the_job_sluid_is_a_key_mismatch() -> None:
    sluid, other = SLUIDS.new(), SLUIDS.new()
    reason = refusal(RULES.classify(on_its_partition(other.encode(), submit(sluid))))
    assert reason.startswith("KeyMismatch:") and sluid in reason


def test_a_record_without_a_key_is_a_key_mismatch() -> None:
    sluid = SLUIDS.new()
    assert refusal(RULES.classify(Message(None, submit(sluid), 0))).startswith("KeyMismatch:")


def test_a_cancel_with_the_wrong_key_is_only_a_dead_letter() -> None:
    sluid = SLUIDS.new()
    cancel = encode("CancelJob", {"job_sluid": sluid})
    verdict = RULES.classify(on_its_partition(b"someone-else", cancel))
    assert isinstance(verdict, str) and verdict.startswith("KeyMismatch:")


def test_a_record_on_the_wrong_partition_names_the_partitioner_setting() -> None:
    sluid = SLUIDS.new()
    right = partition_for(sluid.encode(), SETTINGS.partitions)
    wrong = (right + 1) % SETTINGS.partitions
    reason = refusal(RULES.classify(Message(sluid.encode(), submit(sluid), wrong)))
    assert reason.startswith(f"PartitionMismatch: key {sluid!r} hashes to partition {right} "
                             "with murmur2")
    assert "-X topic.partitioner=murmur2_random" in reason


def test_a_submission_without_an_absolute_working_directory_is_refused() -> None:
    for workdir in ("", "relative/dir"):
        sluid = SLUIDS.new()
        verdict = RULES.classify(on_its_partition(sluid.encode(), submit(sluid, workdir=workdir)))
        assert refusal(verdict).startswith("EmptyWorkingDirectory:")


def test_node_requests_are_keyed_by_their_subject() -> None:
    node = SLUIDS.new()
    register = encode("RegisterNode", {"node_sluid": node, "name": "n1", "cpus": 1, "mem_mb": 1,
                                       "gpus": 0, "gpu_type": "", "features": [], "boot_ms": 0})
    drain = encode("DrainNode", {"name": "n1", "reason": "x", "down": False, "user": "root"})
    assert isinstance(RULES.classify(on_its_partition(node.encode(), register)), tuple)
    assert isinstance(RULES.classify(on_its_partition(b"n1", drain)), tuple)
    verdict = RULES.classify(on_its_partition(node.encode(), drain))
    assert isinstance(verdict, str) and verdict.startswith("KeyMismatch:")  # no job to reject


def test_a_request_over_the_limit_counts_its_headers() -> None:
    sluid = SLUIDS.new()
    value = submit(sluid)
    headers = [("auth", b"x" * (SETTINGS.max_request_bytes - len(value)))]
    verdict = RULES.classify(on_its_partition(sluid.encode(), value, headers=headers))
    assert isinstance(verdict, str)
    assert verdict.startswith("RequestTooLarge:") and "SLUICE_MAX_REQUEST_BYTES" in verdict
    assert record_size(sluid.encode(), value, headers) > SETTINGS.max_request_bytes


def test_undecodable_values_and_facts_are_named() -> None:
    fact = encode("JobReleased", {"event_sluid": SLUIDS.new(), "shard": "x", "shard_seq": 1,
                                  "time_ms": 1, "job_sluid": SLUIDS.new()})
    assert str(RULES.classify(on_its_partition(b"k", b"\x17junk"))).startswith("Undecodable:")
    assert str(RULES.classify(on_its_partition(b"k", fact))).startswith("NotARequest:")
    assert str(RULES.classify(on_its_partition(b"k", b""))).startswith("EmptyRecord:")


def test_a_dead_letter_keeps_the_whole_record_when_it_fits() -> None:
    value = b"v" * 1000
    name, letter = decode(dead_letter_value(source_topic="t", partition=1, offset=5, key=b"k",
                                            value=value, error="why"))
    assert name == "DeadLetter"
    assert (letter["partition"], letter["offset"], letter["value"], letter["error"]) == (
        1, 5, value, "why")


def test_a_dead_letter_too_large_for_kafka_is_truncated_but_keeps_position_and_reason() -> None:
    value = b"v" * 1_100_000
    encoded = dead_letter_value(source_topic="t", partition=2, offset=9, key=b"k" * 5000,
                                value=value, error="RequestTooLarge: big")
    _, letter = decode(encoded)
    assert len(encoded) < DEAD_LETTER_MAX_BYTES
    assert (letter["source_topic"], letter["partition"], letter["offset"]) == ("t", 2, 9)
    assert letter["error"].startswith("RequestTooLarge: big")
    assert "value truncated from 1100000" in letter["error"]
    assert "key truncated from 5000" in letter["error"]
    assert value.startswith(letter["value"]) and len(letter["value"]) < len(value)


def test_a_huge_value_is_dead_lettered_without_being_encoded_whole() -> None:
    """A record of a gzip batch inflates to up to 1 GB (librdkafka bounds no gzip batch): its
    letter encoded whole, only to be cut, cost the worker another copy or more (red team)."""
    value = b"\0" * 64_000_000
    tracemalloc.start()
    try:
        encoded = dead_letter_value(source_topic="t", partition=2, offset=9, key=b"k",
                                    value=value, error="RequestTooLarge: big")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4_000_000, f"{peak} bytes allocated to dead-letter a 64 MB value"
    assert "value truncated from 64000000" in decode(encoded)[1]["error"]


def test_a_dead_letter_has_a_minimal_fallback_with_the_position_and_reason() -> None:
    item = dead_letter("t.dead", source_topic="t", partition=0, offset=3, key=b"k" * 3000,
                       value=b"v" * 100, error="ForwardFailed: because")
    assert item.key is not None and len(item.key) == 1024
    assert item.fallback is not None
    _, letter = decode(item.fallback.value)
    assert (letter["offset"], letter["value"]) == (3, b"")
    assert letter["error"].startswith("ForwardFailed: because")


def test_a_test_without_an_absolute_working_directory_is_refused_as_a_submission() -> None:
    sluid = SLUIDS.new()
    body = {"user": "alice", "command": ["true"], "workdir": "rel"}
    value = encode("TestSubmitJob", {"job_sluid": sluid, "spec": body})
    verdict = RULES.classify(on_its_partition(sluid.encode(), value))
    assert isinstance(verdict, Refusal) and verdict.name == "TestSubmitJob"
    assert verdict.reason.startswith("EmptyWorkingDirectory:")


def test_a_plan_starts_named_by_anything_but_a_sluid_is_a_dead_letter() -> None:
    """A ``PlanStarts`` names its answers by a SLUID its client mints: a request named by
    4 KB of text (500 KB within the default limit) would have every shard echo it into the
    ledger and the views keep it as a key of their last 10,000 answers (5 GB). Refused at the
    intake, as any record that breaks the contract."""
    for name in ("x" * 4_000, "", "s" + "!" * 13, "hello"):
        value = encode("PlanStarts", {"request_sluid": name, "user": "alice", "nonce": 1})
        verdict = RULES.classify(on_its_partition(name.encode(), value))
        assert isinstance(verdict, str) and verdict.startswith("InvalidSluid:"), verdict
    sluid = SLUIDS.new()
    value = encode("PlanStarts", {"request_sluid": sluid, "user": "alice", "nonce": 1})
    verdict = RULES.classify(on_its_partition(sluid.encode(), value))
    assert isinstance(verdict, tuple) and verdict[0] == "PlanStarts"
