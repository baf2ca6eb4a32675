"""Issue #11: out-of-range values get a named rejection, and the shard goes on deciding.

Seen before: ``sluice submit -t 99999999999999999`` raised ``OverflowError`` in backfill and
the batch was retried for ever; an ``UpdateJob`` with ``nodes_min`` 3000000000 wedged the shard
for good (the fact did not encode). Now the CLI refuses the first before sending, the core
refuses both when they arrive anyway (a client that skips the CLI), and a job submitted right
after completes. ``sluice verify`` re-decides the whole ledger with 0 divergences, and
``sluice status`` shows the shard cycling — then, once the worker is killed, STALLED.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cli.audit import verify
from projections.replay import read_facts
from schemas import SluidGenerator, encode
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER, facts, produce_raw, submit_records

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

HUGE_LIMIT_S = 99_999_999_999_999_999 * 60  # -t 99999999999999999 (minutes), as the CLI sends


def _sluice(system: LocalSystem, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **system.settings.as_env()}
    # the jobs' output files go to the submit directory: the system's home, not the checkout
    return subprocess.run([sys.executable, "-m", "cli.main", *argv], env=env, text=True,
                          cwd=system.settings.home, capture_output=True, timeout=180,
                          check=False)


def test_out_of_range_submit_and_update_are_rejected_and_the_next_job_completes(
    system: LocalSystem,
) -> None:
    system.start_core()
    system.start_nodes(1, cpus=2)
    system.wait_nodes_idle(1)

    cli = _sluice(system, "submit", "-t", "99999999999999999", "--", "true")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert "ValueOutOfRange" in cli.stderr and "time_limit_s" in cli.stderr
    assert "Traceback" not in cli.stderr and len(cli.stderr.strip().splitlines()) == 1

    sluids = SluidGenerator(system.settings.cluster_id)
    huge, held = sluids.new(), sluids.new()
    produce_raw(system.settings, [
        submit_records(huge, time_limit_s=HUGE_LIMIT_S),
        submit_records(held, hold=True),
    ])
    system.wait(lambda: system.client.get(f"/v1/jobs/{held}")["job"]["state"] == "PENDING",
                90, "the held job queued")
    update = encode("UpdateJob", {"job_sluid": held, "user": TEST_USER,
                                  "changes": {"nodes_min": "3000000000"}})
    produce_raw(system.settings, [(held.encode(), update)])

    def rejections() -> dict[str, str] | None:
        found = {r.record["job_sluid"]: r.record["reason"]
                 for r in facts(system.settings, "JobRejected")}
        return found if {huge, held} <= set(found) else None

    rejected = system.wait(rejections, 90, "both rejections")
    assert rejected[huge] == "ValueOutOfRange"
    assert rejected[held] == "ValueOutOfRange"
    assert system.client.get(f"/v1/jobs/{huge}")["job"]["state"] == "REJECTED"
    still = system.client.get(f"/v1/jobs/{held}")["job"]
    assert still["state"] == "PENDING", still  # the refused update changed nothing

    after = _sluice(system, "submit", "-W", "--timeout", "120", "--", "true")
    assert after.returncode == 0, after.stdout + after.stderr + system.log_tail()
    assert "ended COMPLETED" in after.stdout
    assert system.processes["worker"].poll() is None
    assert not facts(system.settings, "RequestDenied")  # no InternalError on the way

    reports = verify(system.settings, read_facts(system.settings))
    assert reports and all(not r.divergences for r in reports), [r.lines() for r in reports]
    assert sum(r.checked for r in reports) > 0

    status = _sluice(system, "status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert "last cycle" in status.stdout and "STALLED" not in status.stdout

    system.kill("worker")  # the views stay caught up with a ledger that stands still …

    def stalled() -> str | None:
        done = _sluice(system, "status", "--stale", "3")
        return done.stdout if done.returncode == 1 and "STALLED" in done.stdout else None

    assert "STALLED" in system.wait(stalled, 120, "sluice status to report the stalled shard")
