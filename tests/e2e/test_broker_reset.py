"""A home kept while the broker's topics were reset: the stores are not the new ledger's.

Seen in the Slurm user round (2026-12-08): ``sluice up`` on a fresh broker with an old
``SLUICE_HOME`` showed the old cluster's nodes and jobs RUNNING for hours. Each store's
positions are past the end of the new topics (``streams.stale_store``): the views and the
shard set their stores aside and fold the ledger the broker has; a job submitted after the
reset runs (a shard that kept its old inbox offset would skip every request up to it).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from cli.client import NoSuchJobError
from cli.services import prepare_topics
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]


def _submit(system: LocalSystem, workdir: Path) -> str:
    sluid = system.client.sluids.new()
    spec = {"user": TEST_USER, "command": ["true"], "workdir": str(workdir)}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    return sluid


def _job(system: LocalSystem, sluid: str) -> dict[str, Any] | None:
    try:
        return dict(system.client.job(sluid))
    except NoSuchJobError:
        return None


def _reset_topics(system: LocalSystem) -> None:
    """Delete every topic of the system and make them again, empty (a broker reset)."""
    admin = AdminClient({"bootstrap.servers": system.settings.bootstrap})
    prefix = system.settings.prefix
    mine = [t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix)]
    for future in admin.delete_topics(mine, operation_timeout=30).values():
        future.result()
    deadline = time.monotonic() + 60
    while any(t.startswith(prefix) for t in admin.list_topics(timeout=10).topics):
        assert time.monotonic() < deadline, "the topics were not deleted"
        time.sleep(0.5)
    prepare_topics(system.settings)


def test_stores_of_a_reset_broker_are_set_aside_and_new_jobs_run(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    olds = [_submit(system, tmp_path) for _ in range(5)]
    system.wait(lambda: all((_job(system, s) or {}).get("state") == "COMPLETED" for s in olds),
                90, "the first jobs")
    system.stop()

    _reset_topics(system)
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    new = _submit(system, tmp_path)
    system.wait(lambda: (_job(system, new) or {}).get("state") == "COMPLETED", 90,
                "a job submitted after the reset")
    assert all(_job(system, s) is None for s in olds)  # the old ledger's jobs are gone
    assert len(system.client.get("/v1/nodes")["nodes"]) == 1
    aside = sorted(p.name for p in (system.settings.home).glob("*/*.stale-1"))
    assert any(name.startswith("views.db") for name in aside), aside
    assert any(name.startswith("shard-") for name in aside), aside
