"""A request the intake dead-letters is found by its SLUID (the key), on a real broker.

A raw producer (as a Go, Java or TypeScript client with a bug would) sends an undecodable
record keyed by a fresh SLUID. It never reaches the ledger; before, a client waiting on
``GET /v1/decisions`` for it waited until its timeout, and ``sluice audit`` / ``sluice show
job`` said nothing. Now the views index the dead letters topic by key: the wait ends at once
with the reason, and both commands say ``dead-lettered: Undecodable at TIME``, never the
record's bytes (an anonymous reader sees the reason code only).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from schemas import SluidGenerator
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import produce_raw

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]


def test_an_undecodable_request_keyed_by_a_sluid_is_answered_with_its_dead_letter(
        system: LocalSystem, tmp_path: Path) -> None:
    system.start_core()
    system.wait(lambda: system.client.get("/v1/status"), 90, "the views' API")
    sluid = SluidGenerator(system.settings.cluster_id).new()
    started = time.monotonic()
    produce_raw(system.settings, [(sluid.encode(), b"\x17not avro; SLUICE_JWT=hunter2")])
    answer = system.client.get(f"/v1/decisions?ids={sluid}&wait=50", timeout_s=60)
    waited = time.monotonic() - started
    assert answer["decisions"][sluid] is not None, answer
    letter = answer["decisions"][sluid]["dead_letter"]
    assert letter["reason"] == "Undecodable"
    assert "detail" not in letter  # an anonymous reader: the code only
    assert waited < 40, waited  # answered when the letter came, not at the end of the wait
    assert "hunter2" not in repr(system.client.get(f"/v1/dead-letters/{sluid}"))

    env = {**os.environ, **system.settings.as_env(), "PYTHONPATH": str(REPO), "TZ": "UTC"}

    def sluice(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120, check=False)

    audit = sluice("audit", sluid)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "dead-lettered: Undecodable at " in audit.stdout
    show = sluice("show", "job", sluid)
    assert show.returncode == 1
    assert "dead-lettered: Undecodable at " in show.stderr, show.stderr
    assert "Traceback" not in show.stderr + audit.stderr
