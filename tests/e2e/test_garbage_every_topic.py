"""Records nobody should write, written straight to every topic (with no ACLs, as on a bare
`sluice up`, any client can): truncated, empty, a tombstone (no value), another record's
schema, garbage after the magic bytes, 900 kB; keyed by a SLUID, by nothing, by bytes that
are not UTF-8. Nothing stops: the worker, the views and the node daemon run on, a job runs
after, and `sluice replay` and `sluice verify` still read the ledger and the inbox (a
tombstone on the ledger stopped the views' process, and one on the inbox stopped verify)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli.audit import verify
from projections.replay import read_facts
from schemas import SluidGenerator, encode
from streams.clients import producer
from streams.topics import Topics
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


def _garbage(sluids: SluidGenerator) -> dict[str, bytes | None]:
    submit = encode("SubmitJob", {"job_sluid": sluids.new(),
                                  "spec": {"user": TEST_USER, "command": ["true"]}})
    beat = encode("NodeHeartbeat", {"node_sluid": sluids.new(), "name": "ghost",
                                    "time_ms": 1, "runs": []})
    return {"truncated": submit[:len(submit) // 2], "header only": submit[:10], "empty": b"",
            "tombstone": None, "another schema": beat,
            "garbage": b"\xc3\x01" + b"\xff" * 40,
            "oversized": b"\xc3\x01" + bytes(8) + b"\x02" * 900_000}


def _run_job(system: LocalSystem, workdir: Path) -> dict[str, Any]:
    sluid = system.client.sluids.new()
    spec = {"user": TEST_USER, "command": ["true"], "workdir": str(workdir)}
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
    return dict(system.wait(
        lambda: (job := system.client.get(f"/v1/jobs/{sluid}")["job"])["state"] == "COMPLETED"
        and job, 90, "the job to complete"))


def test_bad_records_on_every_topic_stop_nothing_and_replay_and_verify_still_read(
    system: LocalSystem, tmp_path: Path,
) -> None:
    system.start_core()
    system.start_nodes(1)
    system.wait_nodes_idle(1)
    first = _run_job(system, tmp_path)

    topics = Topics(system.settings)
    sluids = SluidGenerator(system.settings.cluster_id)
    out = producer(system.settings.bootstrap, **{"message.max.bytes": 2_000_000})
    for topic in (topics.requests, topics.shard_inbox, topics.events, topics.node_commands,
                  topics.heartbeats, topics.job_starts, topics.dead_letters):
        for value in _garbage(sluids).values():
            for key in (sluids.new().encode(), None, b"\xff\xfe"):
                out.produce(topic, value, key)
    assert out.flush(60) == 0
    time.sleep(5)  # every reader has read them

    second = _run_job(system, tmp_path)
    assert second["job_id"] == first["job_id"] + 1
    assert all(p.poll() is None for p in system.processes.values())

    reports = verify(system.settings, read_facts(system.settings))
    assert reports and all(not r.divergences for r in reports), [r.lines() for r in reports]
    replayed = subprocess.run(
        [sys.executable, "-m", "cli.main", "replay", "--json"], capture_output=True, text=True,
        env={**os.environ, **system.settings.as_env()}, check=True, timeout=120)
    jobs = json.loads(replayed.stdout)["jobs"]
    live = {j["job_sluid"]: j["state"] for j in system.client.get("/v1/jobs?all=1")["jobs"]}
    assert {s: j["state"] for s, j in jobs.items()} == live == {
        first["job_sluid"]: "COMPLETED", second["job_sluid"]: "COMPLETED"}
