"""The shard runner on the real broker: a request that makes the core raise is refused with
``InternalError`` and the batch goes on; a request whose facts break half-way through folding
is rolled back from the shard's RocksDB store; a failing scheduling pass emits no pass. Each
batch is written once (its transaction commits) and the state equals the fold of the ledger.
A runner that is fenced, or fails to start, releases its store.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

import agents.shard_runner as runner_module
import scheduler
import scheduler.cycle as cycle_module
from agents.auth.seal import seal_headers, worker_secret
from agents.shard_runner import BatchStats, InboxRecord, ShardRunner
from cli.services import prepare_topics
from schemas import SluidGenerator, encode
from streams.settings import Settings
from streams.topics import Topics
from tests.e2e.ledger import facts

pytestmark = [pytest.mark.kafka]


def _submit(sluid: str, **spec: Any) -> bytes:
    body = {"user": "alice", "command": ["true"], **spec}
    return encode("SubmitJob", {"job_sluid": sluid, "spec": body})


def _shard(bootstrap: str, prefix: str, home: Path) -> Settings:
    """One shard's settings on a fresh topic prefix, with its topics made."""
    settings = Settings(bootstrap=bootstrap, prefix=prefix, cluster=prefix, partitions=1,
                        home=home)
    prepare_topics(settings)
    return settings


def _sealed(settings: Settings, offset: int, now: int, value: bytes) -> InboxRecord:
    """An inbox record as the intake forwards it: sealed with the worker secret."""
    headers = seal_headers(worker_secret(settings.home), "intake", now, value)
    return InboxRecord(offset, now, value, tuple(headers))


def test_a_failing_request_is_refused_and_the_shard_goes_on(
    kafka_bootstrap: str, tmp_path: Path, unique: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = _shard(kafka_bootstrap, f"r{unique}", tmp_path)
    seen: list[BatchStats] = []
    runner = ShardRunner(settings, 0, lambda _a, _b: [], on_batch=seen.append)
    sluids = SluidGenerator(settings.cluster_id)
    boom, half, good, later = (sluids.new() for _ in range(4))
    real_decide, real_evolve = cycle_module.decide, cycle_module.evolve

    def decide(state: Any, request: Any, now_ms: int) -> list[Any]:
        inner = getattr(request, "request", request)  # the intake's requests are Attributed
        if getattr(inner, "job_sluid", "") == boom:
            raise OverflowError("int too large to convert")
        return real_decide(state, request, now_ms)

    def evolve(state: Any, fact: Any) -> Any:
        if isinstance(fact, scheduler.JobQueued) and fact.array_task_id == 1 and (
                fact.array_job_sluid == half):
            raise KeyError("half-folded")
        return real_evolve(state, fact)

    monkeypatch.setattr(cycle_module, "decide", decide)
    monkeypatch.setattr(cycle_module, "evolve", evolve)
    now = int(time.time() * 1000)
    try:
        first = runner.process([_sealed(settings, 0, now, _submit(good)),
                                _sealed(settings, 1, now, _submit(boom)),
                                _sealed(settings, 2, now, _submit(half, array="0-2", hold=True))])

        def broken_pass(state: Any, now_ms: int) -> list[Any]:
            raise RuntimeError("the pass is broken")

        monkeypatch.setattr(cycle_module, "schedule", broken_pass)
        second = runner.process([_sealed(settings, 3, now + 1, _submit(later, hold=True))])
        state = runner.state
    finally:
        runner.close()

    assert (first.failed_requests, first.failed_passes) == (2, 0)
    assert (second.failed_requests, second.failed_passes) == (0, 1)
    ledger = facts(settings)
    rejected = {r.record["job_sluid"]: r.record for r in ledger if r.name == "JobRejected"}
    assert rejected[boom]["reason"] == "InternalError" and "Overflow" in rejected[boom]["detail"]
    assert rejected[half]["reason"] == "InternalError" and "half-folded" in rejected[half]["detail"]
    assert {good, later} <= set(state.jobs) and boom not in state.jobs
    assert not state.arrays  # the array's first task was folded, then rolled back
    assert [r.name for r in ledger].count("CycleCompleted") == 2
    assert [r.record["shard_seq"] for r in ledger] == list(range(1, len(ledger) + 1))

    replay = scheduler.initial_state(runner.shard, settings.cluster_id)
    for record in ledger:
        replay = real_evolve(replay, scheduler.from_record(record.name, record.record))
    assert replay.jobs == state.jobs
    assert scheduler.state_meta(replay) == scheduler.state_meta(state)


def test_a_fenced_runner_releases_its_store(
    kafka_bootstrap: str, tmp_path: Path, unique: str,
) -> None:
    """A stalled owner's runner is fenced by the new owner's; closing it must release the
    RocksDB lock, or no runner of that shard could open in this process again (seen in
    tests/e2e/test_failover.py: every later batch failed with the lock held)."""
    settings = _shard(kafka_bootstrap, f"f{unique}", tmp_path / "a")
    other = settings.with_(home=tmp_path / "b")
    now = int(time.time() * 1000)
    sluids = SluidGenerator(settings.cluster_id)
    zombie = ShardRunner(settings, 0, lambda _a, _b: [])
    zombie.process([_sealed(settings, 0, now, _submit(sluids.new(), hold=True))])
    owner = ShardRunner(other, 0, lambda _a, _b: [])  # fences the zombie's producer
    try:
        # The zombie, resumed, writes a batch it decided before it stalled: records that no
        # flush can deliver now, so its flush raises (as in tests/e2e/test_failover.py).
        zombie._producer.begin_transaction()
        zombie._producer.produce(Topics(settings).events, b"never", b"k")
        zombie.close()  # must not raise, and must close the store
        again = ShardRunner(settings, 0, lambda _a, _b: [])  # the store opens: its lock is free
        again.close()
    finally:
        owner.close()


def test_a_runner_that_fails_to_start_releases_its_store(
    kafka_bootstrap: str, tmp_path: Path, unique: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = _shard(kafka_bootstrap, f"s{unique}", tmp_path)

    def broker_away(*_args: Any, **_kwargs: Any) -> Any:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "init_transactions timed out"))

    with monkeypatch.context() as patch:
        patch.setattr(runner_module, "transactional_producer", broker_away)
        with pytest.raises(KafkaException) as caught:
            ShardRunner(settings, 0, lambda _a, _b: [])
    # The error is still held (as a logged traceback may be): its frames keep the half-made
    # runner alive, so only an explicit close could have released the store's lock.
    assert caught.value.__traceback__ is not None
    ShardRunner(settings, 0, lambda _a, _b: []).close()
