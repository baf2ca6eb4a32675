"""``GET /v1/decisions`` holds a request until the views fold the decision it names.

The real projections service and API, reading a ledger written to the real broker with a
transactional producer as the shard writes it.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.unit.projections.kafka_ledger import LedgerWriter, running_projections, settings_for
from tests.unit.projections.ledger_builder import SPEC_DEFAULTS, LedgerBuilder


def get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return dict(json.loads(answer.read()))


def test_a_long_poll_returns_the_job_once_its_fact_is_folded(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    settings = settings_for(kafka_bootstrap, tmp_path, "spdlp1")
    writer = LedgerWriter(settings)
    b = LedgerBuilder()
    b.node("n1")
    writer.write(b.facts)
    job = b.sluid()  # not yet in the ledger
    answers: list[dict[str, Any]] = []
    with running_projections(settings) as proj:
        proj.wait_applied(b.shard, 2)
        asking = threading.Event()

        def ask() -> None:
            asking.set()
            answers.append(get(f"{proj.url}/v1/decisions?ids={job}&wait=30"))

        thread = threading.Thread(target=ask)
        thread.start()
        asking.wait(10)
        seen = len(b.facts)
        b.fact("JobQueued", job_sluid=job, job_id=1, spec={**SPEC_DEFAULTS, "name": "late"},
               array_job_sluid="", array_task_id=-1)
        writer.write(b.facts[seen:])
        thread.join(60)
        unknown = get(f"{proj.url}/v1/decisions?ids={b.sluid()}&wait=0.2")
    assert answers, "the long poll did not answer"
    decision = answers[0]["decisions"][job]
    assert decision["job"]["job_id"] == 1 and decision["job"]["name"] == "late"
    assert list(unknown["decisions"].values()) == [None]


def test_an_array_is_answered_with_its_first_task_and_a_refusal_with_its_denial(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    settings = settings_for(kafka_bootstrap, tmp_path, "spdlp2")
    writer = LedgerWriter(settings)
    b = LedgerBuilder()
    array, denied = b.sluid(), b.sluid()
    for task in (3, 1, 2):
        b.fact("JobQueued", job_sluid=b.sluid(), job_id=10 + task, spec=dict(SPEC_DEFAULTS),
               array_job_sluid=array, array_task_id=task)
    b.fact("RequestDenied", request="SubmitJob", subject_sluid=denied, requester="mallory",
           reason="Unauthenticated", detail="no credential")
    b.cycle(0, 3)  # the array's tasks were queued in one cycle: answered once it is whole
    writer.write(b.facts)
    with running_projections(settings) as proj:
        answer = get(f"{proj.url}/v1/decisions?ids={array},{denied}&wait=30&array=1")
        bad = urllib.request.Request(f"{proj.url}/v1/decisions?wait=1")
        try:
            urllib.request.urlopen(bad, timeout=10)
            status = 200
        except urllib.error.HTTPError as exc:
            status = exc.code
    decisions = answer["decisions"]
    assert decisions[array]["tasks"] == 3
    assert decisions[array]["job"]["array_task_id"] == 1
    assert decisions[array]["job"]["job_id"] == 11
    assert decisions[denied]["denial"]["reason"] == "Unauthenticated"
    assert status == 400
