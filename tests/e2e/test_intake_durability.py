"""Nothing acknowledged is lost and no record stops the intake (issues #11 and #14).

Real worker and node daemons against the real broker; the clients are real too: confluent-kafka
producers (each compression codec), and hand-built record batches sent with a raw
ProduceRequest (``tests.raw_produce``) for what no client library writes.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import KafkaException

from schemas import SluidGenerator, encode
from streams.clients import producer
from streams.partitioner import partition_for
from streams.topics import Topics
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER, dead_letters, facts, job_workdir, submit_records
from tests.raw_produce import RawRecord, produce_batch, record_batch

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

BIG_BYTES = 1_020_097  # the SubmitJob of issue #11: under the broker's 1 MiB, over the limit


def big_submit(sluid: str, size: int = BIG_BYTES) -> tuple[bytes, bytes]:
    """A SubmitJob whose encoded value is exactly ``size`` bytes (a long comment)."""
    spec: dict[str, Any] = {"user": TEST_USER, "command": ["true"], "workdir": job_workdir()}
    base = len(encode("SubmitJob", {"job_sluid": sluid, "spec": {**spec, "comment": ""}}))
    for pad in range(size - base - 8, size - base + 1):
        value = encode("SubmitJob", {"job_sluid": sluid, "spec": {**spec, "comment": "x" * pad}})
        if len(value) == size:
            return sluid.encode(), value
    raise AssertionError("no padding gives that size")


def send(system: LocalSystem, items: list[tuple[bytes, bytes]], **config: Any) -> None:
    """Produce and wait until the broker acknowledged every record."""
    out = producer(system.settings.bootstrap, **{"message.max.bytes": 1_048_576, **config})
    failed: list[str] = []
    for key, value in items:
        out.produce(Topics(system.settings).requests, value, key,
                    on_delivery=lambda err, _m: failed.append(str(err)) if err else None)
        out.poll(0)
    assert out.flush(60) == 0
    assert not failed, failed


def ledger(system: LocalSystem, name: str) -> list[Any]:
    """The ledger's facts of one type; empty while a new topic's leader is not known yet."""
    try:
        return facts(system.settings, name)
    except KafkaException:
        return []


def named(system: LocalSystem, name: str) -> set[str]:
    return {r.record["job_sluid"] for r in ledger(system, name)}


def letters_by_key(system: LocalSystem) -> dict[bytes | None, list[str]]:
    out: dict[bytes | None, list[str]] = {}
    for letter in dead_letters(system.settings):
        out.setdefault(letter.record["key"], []).append(letter.record["error"])
    return out


def completed(system: LocalSystem, sluids: set[str]) -> bool:
    ended = {r.record["job_sluid"]: r.record["state"] for r in ledger(system, "JobEnded")}
    return sluids <= set(ended) and all(ended[s] == "COMPLETED" for s in sluids)


def test_after_a_1_mib_submit_job_30_normal_submissions_all_complete_and_it_is_dead_lettered(
    system: LocalSystem,
) -> None:
    system.start("worker", "worker", "--loglevel", "info")
    system.start_nodes(2)
    sluids = SluidGenerator(system.settings.cluster_id)
    big, normal = sluids.new(), [sluids.new() for _ in range(30)]

    send(system, [big_submit(big), *(submit_records(s) for s in normal)])

    system.wait(lambda: completed(system, set(normal)), 240, "30 normal jobs to complete")
    letters = letters_by_key(system)
    assert len(letters[big.encode()]) >= 1
    assert letters[big.encode()][0].startswith(
        f"RequestTooLarge: {BIG_BYTES + len(big)} bytes")
    assert "SLUICE_MAX_REQUEST_BYTES" in letters[big.encode()][0]
    assert big not in named(system, "JobQueued")
    assert system.processes["worker"].poll() is None


def test_a_worker_killed_right_after_a_too_large_record_loses_no_acknowledged_submission(
    system: LocalSystem,
) -> None:
    system.start("worker", "worker", "--loglevel", "info")
    sluids = SluidGenerator(system.settings.cluster_id)
    warm = sluids.new()
    send(system, [submit_records(warm)])
    system.wait(lambda: warm in named(system, "JobQueued"), 90, "the worker to take requests")
    acknowledged: set[str] = set()
    bigs: list[str] = []
    for round_, kill_after_s in enumerate((0.0, 0.5, 1.5)):
        big, normal = sluids.new(), [sluids.new() for _ in range(30)]
        sender = threading.Thread(target=send, args=(
            system, [big_submit(big), *(submit_records(s) for s in normal)]))
        sender.start()
        sender.join(60)
        time.sleep(kill_after_s)
        system.kill(f"worker{'' if round_ == 0 else round_}")  # SIGKILL, mid-stream
        acknowledged |= set(normal)
        bigs.append(big)
        system.start(f"worker{round_ + 1}", "worker", "--loglevel", "info")

    system.wait(lambda: acknowledged <= named(system, "JobQueued"), 180,
                "every acknowledged submission in the ledger")
    queued = Counter(r.record["job_sluid"] for r in facts(system.settings, "JobQueued"))
    assert set(queued.values()) == {1}, "a submission was queued twice"
    system.wait(lambda: all(b.encode() in letters_by_key(system) for b in bigs), 60,
                "a dead letter for every too-large submission")
    assert not set(bigs) & set(queued)


def test_jobs_submitted_with_every_compression_codec_run(system: LocalSystem) -> None:
    system.start("worker", "worker", "--loglevel", "info")
    system.start_nodes(1)
    sluids = SluidGenerator(system.settings.cluster_id)
    by_codec = {codec: sluids.new() for codec in ("gzip", "snappy", "lz4", "zstd")}

    for codec, sluid in by_codec.items():
        send(system, [submit_records(sluid, comment="compress me " * 40)],
             **{"compression.type": codec})

    system.wait(lambda: completed(system, set(by_codec.values())), 180,
                "one job per codec to complete")
    assert not dead_letters(system.settings)
    assert system.processes["worker"].poll() is None


def test_unreadable_records_are_dead_letters_by_position_and_the_next_job_runs(
    system: LocalSystem,
) -> None:
    system.start("worker", "worker", "--loglevel", "info")
    system.start_nodes(1)
    sluids = SluidGenerator(system.settings.cluster_id)
    trailing_gzip, lost_header, good = sluids.new(), sluids.new(), sluids.new()
    topic, partitions = Topics(system.settings).requests, system.settings.partitions

    def raw(sluid: str, **batch: Any) -> tuple[int, int]:
        key, value = submit_records(sluid)
        headers = batch.pop("headers", ())
        answer = produce_batch(system.settings.bootstrap, topic, partition_for(key, partitions),
                               record_batch([RawRecord(key, value, headers)], **batch))
        assert answer.error_code == 0, answer  # the broker accepts both batches
        return partition_for(key, partitions), answer.base_offset

    # Java's GZIPInputStream ignores bytes after the gzip member, and so does librdkafka (the
    # intake's client): the batch is read and its job runs (aiokafka refused it).
    raw(trailing_gzip, codec="gzip", compress=lambda p: gzip.compress(p) + b"trailing")
    # Kafka stores header keys as bytes; the client decodes them as UTF-8 and cannot.
    header_at = raw(lost_header, headers=((b"\xff\xfe", b"x"),))
    send(system, [submit_records(good)])

    system.wait(lambda: completed(system, {good, trailing_gzip}), 180,
                "the gzip job and the next good job to complete")
    letters = {(r.record["partition"], r.record["offset"]): r.record
               for r in dead_letters(system.settings)}
    assert set(letters) == {header_at}
    assert letters[header_at]["source_topic"] == topic
    assert letters[header_at]["error"].startswith(
        f"UnreadableBatch: {topic}[{header_at[0]}] offset {header_at[1]}: ")
    assert "UnicodeDecodeError" in letters[header_at]["error"]
    assert lost_header not in named(system, "JobQueued")
    assert system.processes["worker"].poll() is None


def test_submissions_that_break_the_contract_are_rejected_and_dead_lettered_with_the_reason(
    system: LocalSystem,
) -> None:
    system.start("worker", "worker", "--loglevel", "info")
    sluids = SluidGenerator(system.settings.cluster_id)
    wrong_key, wrong_partition, no_workdir, good = (sluids.new() for _ in range(4))
    topic, partitions = Topics(system.settings).requests, system.settings.partitions
    out = producer(system.settings.bootstrap)
    forged = submit_records(wrong_key)[1]
    out.produce(topic, forged, sluids.new().encode())
    key, value = submit_records(wrong_partition)
    out.produce(topic, value, key, partition=(partition_for(key, partitions) + 1) % partitions)
    out.produce(topic, submit_records(no_workdir, workdir="")[1], no_workdir.encode())
    # a client's own "sluice-refused" header is dropped: only the intake marks refusals
    out.produce(topic, submit_records(good)[1], good.encode(),
                headers=[("sluice-refused", b"KeyMismatch: forged")])
    assert out.flush(30) == 0

    system.wait(lambda: len(ledger(system, "JobRejected")) >= 3, 90, "three rejections")
    system.wait(lambda: good in named(system, "JobQueued"), 30, "the good job")
    rejected = {r.record["job_sluid"]: r.record for r in ledger(system, "JobRejected")}
    assert {s: rejected[s]["reason"] for s in rejected} == {
        wrong_key: "KeyMismatch", wrong_partition: "PartitionMismatch",
        no_workdir: "EmptyWorkingDirectory"}
    assert "-X topic.partitioner=murmur2_random" in rejected[wrong_partition]["detail"]
    assert "working directory" in rejected[no_workdir]["detail"]
    errors = {r.record["value"]: r.record["error"] for r in dead_letters(system.settings)}
    assert errors[forged].startswith("KeyMismatch:")
    assert errors[value].startswith("PartitionMismatch:")
    assert named(system, "JobQueued") == {good}
