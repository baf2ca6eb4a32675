"""A warm standby folds the owner's facts into a store equal to the owner's own."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from agents.shard_standby import ShardStandby
from agents.shard_store import ShardStore, store_path
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

JOBS = 12


def _submit(system: LocalSystem, workdir: Path) -> str:
    sluid = system.client.sluids.new()
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
        "user": TEST_USER, "command": ["true"], "workdir": str(workdir)}})
    return sluid


def test_a_standby_store_equals_the_owners_store(system: LocalSystem, tmp_path: Path) -> None:
    system.start_core()
    system.start_nodes(2)
    system.wait_nodes_idle(2)
    standby_home = tmp_path / "standby"
    standby = ShardStandby(system.settings.with_(home=standby_home), 0)
    try:
        first = [_submit(system, tmp_path) for _ in range(JOBS // 2)]
        standby.catch_up()  # midway: later facts arrive on top of a store already written
        second = [_submit(system, tmp_path) for _ in range(JOBS // 2)]
        for sluid in first + second:
            system.wait(lambda s=sluid: system.client.get(f"/v1/jobs/{s}")["job"]["state"]
                        == "COMPLETED", 90, f"job {sluid} to complete")
        system.kill("worker", signal.SIGTERM)  # the owner's store is final now

        owner_store = ShardStore(store_path(system.settings.home, system.settings.cluster))
        owner = owner_store.load()
        owner_store.close()
        assert owner is not None
        system.wait(lambda: standby.catch_up() == 0 and standby.catch_up() == 0, 30,
                    "the standby to reach the ledger's end")
    finally:
        standby.close()

    kept_store = ShardStore(store_path(standby_home, system.settings.cluster))
    kept = kept_store.load()
    kept_store.close()
    assert kept is not None
    assert kept.meta.shard_seq == owner.meta.shard_seq > 0
    assert kept.meta == owner.meta
    assert set(kept.jobs) == set(owner.jobs) >= set(first + second)
    assert kept.jobs == owner.jobs
    assert kept.nodes == owner.nodes
