"""Corrupt local stores at start: the shard's and the views' RocksDB databases are caches of
the ledger, so a worker and a views process that find theirs corrupt set it aside and rebuild
(before: the shard failed every batch for ever, and the views' process exited at start).
Real worker, views, node daemon and broker; the stores are damaged on disk between two runs."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from streams.rocks import RocksStore
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER, facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def _run_job(system: LocalSystem, workdir: Path) -> str:
    sluid = system.client.sluids.new()
    spec = {"user": TEST_USER, "command": ["true"], "workdir": str(workdir)}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    system.wait(lambda: _job(system, sluid)["state"] == "COMPLETED", 90, "the job to complete")
    return sluid


def _corrupt(path: Path) -> None:
    """Flush the database into table files, then overwrite 512 bytes in each."""
    store = RocksStore(path)
    store.flush()  # the rows must be in table files to damage them
    store.close()
    tables = sorted(path.glob("*.sst"))
    assert tables
    for table in tables:
        data = bytearray(table.read_bytes())
        data[len(data) // 3:len(data) // 3 + 512] = bytes(range(256)) * 2
        table.write_bytes(bytes(data))


def test_a_worker_and_views_whose_stores_are_corrupt_rebuild_them_from_the_ledger(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    before = _run_job(system, tmp_path)
    system.kill("worker", signal.SIGTERM)
    system.kill("projections", signal.SIGTERM)

    home = system.settings.home
    shard_stores = sorted((home / "worker").glob("shard-*.db"))
    assert shard_stores
    for store in [*shard_stores, home / "projections" / "views.db"]:
        _corrupt(store)

    system.start_core()
    after = _run_job(system, tmp_path)  # the shard decides again: it is not wedged
    assert _job(system, before)["state"] == "COMPLETED"  # the views were rebuilt
    assert _job(system, after)["job_id"] == _job(system, before)["job_id"] + 1  # same fold
    for store in [*shard_stores, home / "projections" / "views.db"]:
        assert store.with_name(store.name + ".corrupt-1").is_dir()  # kept for the operator
    queued = [r.record["job_sluid"] for r in facts(system.settings, "JobQueued")]
    assert queued == [before, after]  # the rebuilt shard decided nothing twice
    log = (home / "logs" / "worker.log").read_text()
    assert "is corrupt" in log and "rebuilt from the ledger" in log
