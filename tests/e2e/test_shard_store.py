"""The shard's RocksDB rows follow the state: purged jobs leave the store too."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from agents.shard_store import ShardStore
from tests.e2e.harness import LocalSystem, apply_config
from tests.e2e.ledger import TEST_USER

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


def _submit(system: LocalSystem, workdir: Path) -> str:
    sluid = system.client.sluids.new()
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
        "user": TEST_USER, "command": ["true"], "workdir": str(workdir)}})
    return sluid


MIN_JOB_AGE_S = 8  # long enough that a loaded machine cannot age the second job out too


def test_a_job_purged_after_min_job_age_leaves_the_shard_store(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    apply_config(system, f"MinJobAge: {MIN_JOB_AGE_S}\n")
    first = _submit(system, tmp_path)
    system.wait(lambda: system.client.get(f"/v1/jobs/{first}")["job"]["state"] == "COMPLETED",
                60, "the first job to complete")
    time.sleep(MIN_JOB_AGE_S + 1.5)  # past MinJobAge
    second = _submit(system, tmp_path)  # its batch's CycleCompleted purges the first job
    system.wait(lambda: system.client.get(f"/v1/jobs/{second}")["job"]["state"] == "COMPLETED",
                60, "the second job to complete")
    system.kill("worker", signal.SIGTERM)  # well before the second job is MinJobAge old

    store = ShardStore(system.settings.home / "worker" / f"shard-{system.settings.cluster}.db")
    snapshot = store.load()
    store.close()

    assert snapshot is not None
    assert first not in snapshot.jobs
    assert second in snapshot.jobs  # not yet past MinJobAge
