"""A pod joins only its own namespace's Job (agents/bridge/gangs.py; red team).

The gang of a Job is keyed by the Job's uid, taken from the pod's ownerReferences, which the
pod's author writes: a pod of another namespace naming a Job's uid joined that Job's gang and
was bound into its run's slots; one naming it before the bridge knew the gang (after a restart)
took the key, so the real Job's pods were then the strangers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.bridge.gangs import GangTable
from tests.unit.bridge.test_gangs_gone import JOB_UID, SLUID, Bridge, Jobs, pod


class Said(Jobs):
    def __init__(self) -> None:
        super().__init__()
        self.said: list[tuple[str, str, str]] = []

    def unschedulable(self, namespace: str, name: str, reason: str, message: str,
                      uid: str = "") -> None:
        self.said.append((namespace, name, reason))


def _waiting(uid: str, namespace: str) -> dict[str, Any]:
    stranger = pod(uid)
    stranger["metadata"]["namespace"] = namespace
    stranger["spec"] = {"schedulerName": "sluice"}
    stranger["status"] = {"phase": "Pending"}
    return stranger


def _table(tmp_path: Path) -> tuple[GangTable, Bridge, Said]:
    bridge = Bridge(tmp_path)
    kube = Said()
    bridge.kube = kube
    return GangTable(bridge), bridge, kube  # type: ignore[arg-type]


def test_a_pod_of_another_namespace_naming_a_known_jobs_uid_is_ignored(tmp_path: Path) -> None:
    gangs, bridge, kube = _table(tmp_path)
    bridge.state.gangs[JOB_UID] = SLUID
    bridge.state.refs[JOB_UID] = ["Job", "ml", "train"]
    gangs.on_pod("ADDED", _waiting("evil-pod", "evil"))
    assert "evil-pod" not in gangs.pods and not gangs.members.get(JOB_UID)
    assert kube.said == [] and bridge.sent == []


def test_a_pod_naming_a_uid_its_namespaces_job_does_not_have_takes_no_gang(
        tmp_path: Path) -> None:
    gangs, bridge, kube = _table(tmp_path)
    kube.jobs[("evil", "train")] = {"metadata": {"uid": "evil-job-uid", "annotations": {}},
                                    "spec": {"parallelism": 1}}
    stranger = _waiting("evil-pod", "evil")
    gangs.on_pod("ADDED", stranger)
    gangs.on_pod("MODIFIED", stranger)  # its condition written: said once, not again
    assert JOB_UID not in gangs.gangs and bridge.state.gangs == {} and bridge.sent == []
    assert kube.said == [("evil", "train-evil-pod", "ForeignOwner")]
