"""The job rows' keys in their order (``sluice replay --json``, the HTTP API and ``show job``
print the rows as they are): a queued job (with and without its batch script), an update of a
pending job, a run started and ended, decoded as the ledger gives them and as built."""

from __future__ import annotations

from typing import Any

import pytest

from projections.replay import Fact, views_at
from schemas import decode, encode
from tests.unit.projections.ledger_builder import LedgerBuilder

QUEUED = [
    "job_id", "job_sluid", "name", "user", "account", "partition", "qos", "nodes_min",
    "gpus_per_node", "cpus_per_task", "ntasks", "cpus_per_node", "time_limit_s", "workdir",
    "command", "nodes_max", "mem_per_node_mb", "exclusive", "gpu_type", "requeue", "dependency",
    "begin_ms", "nice", "comment", "gpus", "ntasks_per_node", "mem_per_cpu_mb", "constraint",
    "nodelist", "exclude", "signal_spec", "array_limit", "mail_type", "mail_user", "output",
    "error", "reservation", "admin_comment", "extra",
]
"""What a ``JobQueued`` describes, in order (then the batch script, when it has one)."""
STATE = [
    "state", "reason", "priority", "flags", "submit_ms", "start_ms", "end_ms", "nodes",
    "run_sluid", "exit_code", "signal", "runs", "array_job_sluid", "array_task_id",
    "array_job_id", "restart_count", "submitter", "nonce",
]
"""Then the job's state, as the row is made."""
STARTED = ["segments", "kill_reason", "alloc", "defer_release"]
"""Keys a first ``JobStarted`` adds, in order."""
RUN = ["run_sluid", "restart_count", "start_ms", "end_ms", "state", "exit_code", "signal",
       "nodes", "requeue_reason", "cpus"]


def ledger() -> tuple[LedgerBuilder, dict[str, str]]:
    b = LedgerBuilder()
    b.node("n1", cpus=8)
    plain = b.queued(name="plain")
    scripted = b.queued(name="scripted", script="#!/bin/sh\ntrue\n")
    updated = b.queued(name="updated")
    b.updated(updated, name="renamed", comment="changed", script="#!/bin/sh\nfalse\n")
    ran = b.queued(name="ran")
    run = b.started(ran, ["n1"])
    b.advance(1_000)
    b.ended(ran, run, "FAILED", exit_code=3, reason="NonZeroExitCode")
    return b, {"plain": plain, "scripted": scripted, "updated": updated, "ran": ran}


def roundtrip(name: str, record: dict[str, Any]) -> dict[str, Any]:
    decoded_name, decoded = decode(encode(name, record))
    assert decoded_name == name
    return decoded


@pytest.mark.parametrize("decoded", [True, False])
def test_job_rows_keep_their_keys_in_order(decoded: bool) -> None:
    b, jobs = ledger()
    facts = [Fact(name, roundtrip(name, record) if decoded else record, 0, offset)
             for offset, (name, record) in enumerate(b.facts)]

    rows = views_at(facts).jobs

    assert list(rows[jobs["plain"]]) == QUEUED + STATE
    assert list(rows[jobs["scripted"]]) == [*QUEUED, "script", *STATE]
    # an update of a pending job sets what it describes in place: the script comes last
    assert list(rows[jobs["updated"]]) == [*QUEUED, *STATE, "script"]
    assert rows[jobs["updated"]]["name"] == "renamed"
    ran = rows[jobs["ran"]]
    assert list(ran) == QUEUED + STATE + STARTED
    assert list(ran["runs"][0]) == RUN
    assert (ran["state"], ran["exit_code"], ran["reason"]) == ("FAILED", 3, "NonZeroExitCode")
    assert (ran["runs"][0]["state"], ran["runs"][0]["exit_code"]) == ("FAILED", 3)
