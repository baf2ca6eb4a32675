"""Every request reaches the shard, whatever faust acknowledged during a rebalance (issue 11).

faust acknowledges, and then commits over, records it never delivered to the intake
(docs/ARCHITECTURE.md, "Records faust acknowledges without delivering"). The first test does to
the worker group's offsets exactly what such an acknowledgement does (commits past records the
intake never saw) and the second what a redelivery does (rewinds them); the third runs real
rebalances (workers joining and leaving one group) while a client writes requests without pause.
Real worker processes, real broker.
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
    """Commit the (stopped) worker group's offsets of every requests partition to its end or
    its start, as faust's acknowledgements and redeliveries do."""
    topic = Topics(system.settings).requests
    group = consumer(system.settings.bootstrap, f"{system.settings.prefix}-worker")
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
    set_worker_offsets(system, "end")  # faust would now never deliver the 30

    start_worker(system, "worker2")
    system.wait(lambda: set(unseen) <= set(queued(system)), 120, "the 30 to be queued")
    assert "were never delivered by faust; read" in worker_log(system, "worker2")
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
    set_worker_offsets(system, "start")  # faust will deliver all 21 again

    start_worker(system, "worker2")
    last = sluids.new()
    send(system, [last])
    system.wait(lambda: queued(system)[last], 120, "the next request to be queued")
    assert "were forwarded before; dropped" in worker_log(system, "worker2")
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
