"""A gang's job under a SLUID another client minted too (agents/bridge/gangs.py): the bridge
names its submissions by a nonce of the gang's own, and submits the gang again under a new
SLUID when the job the views show under its SLUID is another submission's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.bridge.gang import Gang
from agents.bridge.gangs import GangTable, gang_nonce
from tests.unit.bridge.test_gangs_gone import JOB_UID, SLUID, pod, table

OURS = gang_nonce(JOB_UID)


def test_a_gangs_nonce_is_its_own_and_the_same_after_a_restart() -> None:
    assert gang_nonce(JOB_UID) == OURS and 0 < OURS < 1 << 63
    assert gang_nonce("job-uid-2") != OURS


@pytest.mark.parametrize(("row", "again"), [
    ({"state": "PENDING", "job_id": 7, "nonce": OURS}, False),
    ({"state": "PENDING", "job_id": 7, "nonce": OURS + 1}, True),  # another client's job
    ({"state": "REJECTED", "reason": "SluidInUse", "nonce": OURS}, True),
    ({"state": "REJECTED", "reason": "RequestedNodeConfigUnavailable", "nonce": OURS}, False),
    ({"state": "PENDING", "job_id": 7}, False),  # a row from before nonces: ours
    ({"state": "COMPLETED", "job_id": 7, "nonce": OURS}, True),  # ended: the pods want a run
])
def test_the_gang_goes_again_under_a_new_sluid_only_when_its_job_is_not_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: dict[str, Any], again: bool,
) -> None:
    gangs, bridge = table(tmp_path)
    submitted: list[str] = []
    monkeypatch.setattr(gangs, "_sluice_job", lambda sluid: dict(row))
    monkeypatch.setattr(gangs, "_submit", lambda gang, waiting, annotations:
                        submitted.append(gang.key))
    monkeypatch.setattr(gangs, "_say", lambda *args: None)
    gangs._check(JOB_UID, Gang(JOB_UID, "Job", "ml", "train", 1), pod("p1"))
    assert submitted == ([JOB_UID] if again else [])
    assert bridge.state.gangs == {JOB_UID: SLUID}  # _submit (stood in for) remaps it


def test_a_gangs_submission_carries_its_nonce(tmp_path: Path) -> None:
    gangs, bridge = table(tmp_path)
    sent: list[dict[str, Any]] = []
    bridge.submit = lambda sluid, spec, nonce: sent.append({"nonce": nonce})  # type: ignore[attr-defined]
    bridge.sluids = type("G", (), {"new": lambda self: "s00000000000J2"})()  # type: ignore[attr-defined]
    bridge.claims = type("C", (), {"gpu_demand": lambda self, p: 0})()  # type: ignore[attr-defined]
    bridge.kube.namespace_user = lambda namespace: "alice"  # type: ignore[attr-defined]
    GangTable._submit(gangs, Gang(JOB_UID, "Job", "ml", "train", 1), pod("p1"), {})
    assert sent == [{"nonce": OURS}] and bridge.state.gangs[JOB_UID] == "s00000000000J2"


def test_a_run_under_the_gangs_sluid_of_another_clients_job_binds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    gangs, bridge = table(tmp_path)
    settled: list[str] = []
    monkeypatch.setattr(gangs, "_settle", settled.append)
    launch = {"job_sluid": SLUID, "run_sluid": "s00000000000R1", "nodes": ["n1"],
              "batch_host": True}
    gangs.launch("n1", {**launch, "command": ["/bin/sh", "-c", "someone else's"]})
    assert bridge.state.runs == {} and settled == []
    gangs.launch("n1", {**launch, "command": ["kubernetes", "Job", "ml/train"]})
    assert list(bridge.state.runs) == ["s00000000000R1"] and settled == [JOB_UID]
