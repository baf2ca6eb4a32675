"""A crash of the worker mid-stream loses no accepted job and duplicates no allocation."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from schemas import SluidGenerator
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import assert_exactly_once, facts, produce_raw, submit_records

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

JOBS = 1000
NODES = 4


def _submit_in_background(system: LocalSystem, sluids: list[str]) -> threading.Thread:
    def produce() -> None:
        for start in range(0, len(sluids), 50):  # ~1,000 jobs over ~4 s
            produce_raw(system.settings, [
                submit_records(s, exclusive=True, time_limit_s=600)
                for s in sluids[start:start + 50]
            ])
            time.sleep(0.2)

    thread = threading.Thread(target=produce)
    thread.start()
    return thread


def test_a_worker_killed_mid_stream_loses_nothing_and_allocates_nothing_twice(
    system: LocalSystem,
) -> None:
    system.start("worker", "worker", "--loglevel", "info")
    system.start_nodes(NODES, cpus=2)
    system.start("projections", "projections")
    system.wait_nodes_idle(NODES)
    generator = SluidGenerator(system.settings.cluster_id)
    sluids = [generator.new() for _ in range(JOBS)]

    producer = _submit_in_background(system, sluids)
    system.wait(lambda: len(facts(system.settings, "JobQueued")) >= 150, 60, "150 jobs queued")
    system.kill("worker")  # SIGKILL, mid-stream: submissions and job exits keep arriving
    time.sleep(2)
    system.start("worker-2", "worker", "--loglevel", "info")
    producer.join(60)

    def all_ended() -> bool:
        return len(facts(system.settings, "JobEnded")) >= JOBS

    system.wait(all_ended, 400, f"{JOBS} jobs to end")
    ledger = facts(system.settings)

    assert assert_exactly_once(ledger, sluids) == JOBS  # one exclusive node per job
    ended = [r.record for r in ledger if r.name == "JobEnded"]
    assert Counter(e["state"] for e in ended) == {"COMPLETED": JOBS}
