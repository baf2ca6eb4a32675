"""Bad input gets a clear answer and nothing stops: dead letters and named rejections."""

from __future__ import annotations

import pytest

from schemas import SluidGenerator, encode, fingerprint
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import dead_letters, facts, produce_raw, submit_records

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


def test_bad_records_become_dead_letters_and_bad_jobs_named_rejections(
    system: LocalSystem,
) -> None:
    system.start("worker", "worker", "--loglevel", "info")
    sluids = SluidGenerator(system.settings.cluster_id)
    zero, partition, negative, good = (sluids.new() for _ in range(4))
    unknown_fp = b"\xc3\x01" + bytes(8) + b"\x02"
    a_fact = encode("JobReleased", {"event_sluid": good, "shard": "x", "shard_seq": 1,
                                    "time_ms": 1, "job_sluid": good})
    produce_raw(system.settings, [
        (b"garbage", b"\x17not avro at all"),
        (b"unknown", unknown_fp),
        (b"truncated", encode("CancelJob", {"job_sluid": good})[:12]),
        (b"fact", a_fact),
        submit_records(zero, nodes_min=0),
        submit_records(partition, partition="no-such-partition"),
        submit_records(negative, time_limit_s=-5),
        submit_records(good),
    ])

    queued = system.wait(lambda: facts(system.settings, "JobQueued"), 90, "the good job")
    letters = {r.record["key"]: r.record["error"] for r in dead_letters(system.settings)}
    rejected = {r.record["job_sluid"]: r.record for r in facts(system.settings, "JobRejected")}

    assert [r.record["job_sluid"] for r in queued] == [good]
    assert set(letters) == {b"garbage", b"unknown", b"truncated", b"fact"}
    assert "magic" in letters[b"garbage"]
    assert fingerprint("SubmitJob").hex() not in letters[b"unknown"]
    assert "fingerprint" in letters[b"unknown"] and "0000000000000000" in letters[b"unknown"]
    assert "not a request" in letters[b"fact"]
    assert rejected[zero]["reason"] == "InvalidNodeCount"
    assert rejected[partition]["reason"] == "InvalidPartition"
    assert rejected[negative]["reason"] == "InvalidTimeLimit"
    assert all(r["detail"] for r in rejected.values())
    assert system.processes["worker"].poll() is None


def test_garbage_on_the_heartbeats_topic_becomes_dead_letters_and_the_worker_goes_on(
    system: LocalSystem,
) -> None:
    from streams.clients import producer
    from streams.topics import Topics

    system.start("worker", "worker", "--loglevel", "info")
    out = producer(system.settings.bootstrap)
    heartbeats = Topics(system.settings).heartbeats
    beat = encode("NodeHeartbeat", {"node_sluid": "s009M93ZYTBN36", "name": "hb-node",
                                    "time_ms": 1, "runs": []})
    for key, value in ((b"hb-garbage", b"\x17not avro"), (b"hb-truncated", beat[:-2]),
                       (b"hb-other", encode("DrainNode", {"name": "n", "reason": "x"}))):
        out.produce(heartbeats, value, key)
    assert out.flush(30) == 0

    def letters() -> dict[bytes, str]:
        found = {r.record["key"]: r.record["error"] for r in dead_letters(system.settings)
                 if r.record["source_topic"] == heartbeats}
        return found if len(found) == 3 else {}

    found = system.wait(letters, 90, "three dead letters from the heartbeats topic")
    assert found[b"hb-garbage"].startswith("Undecodable: ")
    assert found[b"hb-truncated"].startswith("Undecodable: ")
    assert found[b"hb-other"] == "NotAHeartbeat: a DrainNode on the heartbeats topic"
    submit = SluidGenerator(system.settings.cluster_id).new()
    produce_raw(system.settings, [submit_records(submit)])
    system.wait(lambda: facts(system.settings, "JobQueued"), 90, "a job after the garbage")
    assert system.processes["worker"].poll() is None
