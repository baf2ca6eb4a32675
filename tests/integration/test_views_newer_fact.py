"""Views that could not read a fact of the ledger read it again once restarted, against a real
broker (``ProjectionService.pins``).

Workers upgraded before their views write facts the views cannot decode (``unknown
fingerprint``): the views dead-letter them and hold every later fact of the shard. Their stored
positions used to pass all of it, so views upgraded and restarted resumed past the missing fact
and the shard stayed stuck until ``sluice projections --rebuild``. Here the first views cannot
decode the job's ``JobStarted`` (as views of an older release); the restarted ones can.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import projections.service
from schemas import DecodeError, decode, encode
from tests.unit.projections.kafka_ledger import LedgerWriter, running_projections, settings_for
from tests.unit.projections.ledger_builder import LedgerBuilder


def test_a_fact_the_views_could_not_decode_is_folded_after_their_restart(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"viewsnewer{uuid.uuid4().hex[:8]}"
    settings = settings_for(kafka_bootstrap, tmp_path, prefix)
    builder = LedgerBuilder()
    builder.node("node01")
    job = builder.queued()
    run = builder.started(job, ["node01"])
    newer = encode(*builder.facts[-1])
    builder.ended(job, run)
    for _ in range(6):  # later facts of the shard, spread over the partitions by their keys
        builder.queued()
    LedgerWriter(settings).write(builder.facts)
    last = len(builder.facts)

    real = decode  # what projections.service decodes with

    def older_views(value: bytes) -> tuple[str, dict[str, Any]]:
        if value == newer:
            raise DecodeError("unknown fingerprint (a schema of a newer release)")
        return real(value)

    monkeypatch.setattr(projections.service, "decode", older_views)
    with running_projections(settings) as proj:
        deadline = time.monotonic() + 60
        while not proj.service.freshness()["held"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proj.service.freshness()["held"], "the later facts wait for the missing one"
        assert proj.get_json(f"/v1/jobs/{job}")["job"]["state"] == "PENDING"

    monkeypatch.setattr(projections.service, "decode", real)  # the views upgraded
    with running_projections(settings) as proj:
        proj.wait_applied(builder.shard, last)
        assert not proj.service.freshness()["held"]
        assert proj.get_json(f"/v1/jobs/{job}")["job"]["state"] == "COMPLETED"
