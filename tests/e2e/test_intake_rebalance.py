"""Every request reaches the shard once, whatever a consumer group committed (issue 11).

The intake resumes each requests partition from its own progress (what it forwarded, durably),
never from a consumer group's committed offset: faust's worker group used to commit over
records it never delivered (docs/ARCHITECTURE.md, "Where the intake resumes"), and the
intake's own consumer group commits only hints. The first test commits
those groups past records the intake never saw, the second rewinds them (a redelivery); the
third runs real rebalances (workers joining and leaving the group) while a client writes
requests without pause. Real worker processes, real broker.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from schemas import SluidGenerator
from streams.clients import consumer, producer
from streams.topics import Topics
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import facts, submit_records

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


def send(system: LocalSystem, sluids: list[str]) -> None:
    out = producer(system.settings.bootstrap)
    for sluid in sluids:
        key, value = submit_records(sluid)
        out.produce(Topics(system.settings).requests, value, key)
    assert out.flush(30) == 0


def queued(system: LocalSystem) -> Counter[str]:
    return Counter(r.record["job_sluid"] for r in facts(system.settings, "JobQueued"))


def duplicates(system: LocalSystem) -> list[str]:
    return [r.record["job_sluid"] for r in facts(system.settings, "JobRejected")
            if r.record["reason"] == "DuplicateSubmission"]


def set_worker_offsets(system: LocalSystem, where: str) -> None:
    """Commit the (stopped) worker's groups' offsets of every requests partition, faust's and
    the intake consumer's, to the partition's end or its start."""
    topic = Topics(system.settings).requests
    for name in ("worker", "worker-intake"):
        group = consumer(system.settings.bootstrap, f"{system.settings.prefix}-{name}")
        try:
            offsets = []
            for partition in range(system.settings.partitions):
                low, high = group.get_watermark_offsets(TopicPartition(topic, partition), 10)
                offsets.append(TopicPartition(topic, partition, high if where == "end" else low))
            group.commit(offsets=offsets, asynchronous=False)
        finally:
            group.close()


def worker_log(system: LocalSystem, name: str) -> str:
    return (system.settings.home / "logs" / f"{name}.log").read_text(errors="replace")


def start_worker(system: LocalSystem, name: str) -> None:
    system.start(name, "worker", "--loglevel", "info")


def warm_up(system: LocalSystem, sluids: SluidGenerator) -> str:
    warm = sluids.new()
    send(system, [warm])
    system.wait(lambda: queued(system)[warm], 120, "the worker to take requests")
    return warm


def test_requests_the_worker_group_committed_over_unseen_are_still_forwarded(
    system: LocalSystem,
) -> None:
    sluids = SluidGenerator(system.settings.cluster_id)
    start_worker(system, "worker")
    warm_up(system, sluids)
    system.kill("worker", signal.SIGTERM)  # leaves the group: its offsets can be set
    unseen = [sluids.new() for _ in range(30)]
    send(system, unseen)
    set_worker_offsets(system, "end")  # a reader from the groups' offsets would skip the 30

    start_worker(system, "worker2")
    system.wait(lambda: set(unseen) <= set(queued(system)), 120, "the 30 to be queued")
    assert "requests partitions assigned" in worker_log(system, "worker2")
    assert all(queued(system)[s] == 1 for s in unseen)


def test_requests_the_worker_group_redelivers_are_not_forwarded_again(
    system: LocalSystem,
) -> None:
    sluids = SluidGenerator(system.settings.cluster_id)
    start_worker(system, "worker")
    warm = warm_up(system, sluids)
    first = [sluids.new() for _ in range(20)]
    send(system, first)
    system.wait(lambda: set(first) <= set(queued(system)), 120, "the 20 to be queued")
    system.kill("worker", signal.SIGTERM)
    set_worker_offsets(system, "start")  # a reader from the groups' offsets would resend 21

    start_worker(system, "worker2")
    last = sluids.new()
    send(system, [last])
    system.wait(lambda: queued(system)[last], 120, "the next request to be queued")
    assert "requests partitions assigned" in worker_log(system, "worker2")
    assert duplicates(system) == []  # a re-forwarded SubmitJob would be a DuplicateSubmission
    assert all(queued(system)[s] == 1 for s in [warm, *first, last])


def test_no_request_is_lost_while_workers_join_and_leave_the_group(
    system: LocalSystem, tmp_path: Path,
) -> None:
    home = system.settings.home
    secret = str(home / "worker" / "inbox.key")

    def start(name: str) -> None:
        system.start(name, "worker", "--loglevel", "info",
                     env={"SLUICE_HOME": str(home / name), "SLUICE_WORKER_SECRET": secret})

    sluids = SluidGenerator(system.settings.cluster_id)
    start("worker-a")
    warm_up(system, sluids)
    sent: list[str] = []
    stop = threading.Event()

    def client() -> None:  # a request every 20 ms, without pause, through every rebalance
        out = producer(system.settings.bootstrap)
        topic = Topics(system.settings).requests
        while not stop.is_set():
            sluid = sluids.new()
            out.produce(topic, submit_records(sluid)[1], sluid.encode())
            assert out.flush(30) == 0  # acknowledged: from here on it must not be lost
            sent.append(sluid)
            stop.wait(0.02)

    writer = threading.Thread(target=client)
    writer.start()
    try:
        for step in (lambda: start("worker-b"), lambda: system.kill("worker-a", signal.SIGTERM),
                     lambda: start("worker-c"), lambda: system.kill("worker-b", signal.SIGTERM)):
            step()
            time.sleep(8)  # pacing: let each rebalance happen under load (nothing is timed)
    finally:
        stop.set()
        writer.join(60)
    assert len(sent) > 100
    system.wait(lambda: set(sent) <= set(queued(system)), 240,
                f"all {len(sent)} requests to be queued")
    assert all(count == 1 for count in queued(system).values())
    assert duplicates(system) == []
