"""A gang whose pods are deleted with their controller ends its Sluice job (agents/bridge/gangs.py).

The API server is stood in for by a table of Jobs (what ``Kube.job`` answers); the real thing
is tested in tests/kubernetes/test_bridge.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.bridge.gangs import GangTable
from agents.bridge.slots import Run
from agents.bridge.state import CANCELLED_KEPT, BridgeState

JOB_UID, POD_UID = "job-uid-1", "pod-uid-1"
SLUID = "s00000000000J1"


class Jobs:
    def __init__(self) -> None:
        self.jobs: dict[tuple[str, str], dict[str, Any]] = {}
        self.ending: set[str] = set()  # namespaces being deleted

    def job(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.jobs.get((namespace, name))

    def namespace_ending(self, namespace: str) -> bool:
        return namespace in self.ending


class Bridge:
    """What GangTable uses of the bridge: its state, the API's Jobs, the requests it sends."""

    def __init__(self, path: Path) -> None:
        self.state = BridgeState.load(path)
        self.kube = Jobs()
        self.sent: list[tuple[str, str, dict[str, Any]]] = []
        self.nodes: dict[str, Any] = {}  # the Kubernetes nodes it knows (placement)

    def send(self, key: str, name: str, record: dict[str, Any]) -> None:
        self.sent.append((key, name, record))


def pod(uid: str, owner: str | None = JOB_UID, deleted: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"uid": uid, "name": f"train-{uid}", "namespace": "ml"}
    if owner:
        meta["ownerReferences"] = [{"kind": "Job", "uid": owner, "name": "train",
                                    "controller": True}]
    if deleted:
        meta["deletionTimestamp"] = "2026-12-05T03:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}


def table(tmp_path: Path, kind: str = "Job", key: str = JOB_UID) -> tuple[GangTable, Bridge]:
    bridge = Bridge(tmp_path)
    bridge.state.gangs[key] = SLUID
    bridge.state.refs[key] = [kind, "ml", "train" if kind == "Job" else f"train-{key}"]
    return GangTable(bridge), bridge  # type: ignore[arg-type]


def cancels(bridge: Bridge) -> list[str]:
    return [key for key, name, _ in bridge.sent if name == "CancelJob"]


def test_a_deleted_jobs_last_pod_cancels_the_job_and_forgets_the_gang(tmp_path: Path) -> None:
    gangs, bridge = table(tmp_path)
    gangs.on_pod("ADDED", pod(POD_UID))
    gangs.on_pod("DELETED", pod(POD_UID))  # the Job is gone: Kube.job answers None
    assert cancels(bridge) == [SLUID]
    assert bridge.sent[0][2] == {"job_sluid": SLUID, "user": "", "reason": "pods deleted"}
    assert JOB_UID not in bridge.state.gangs and JOB_UID not in bridge.state.refs
    assert bridge.state.cancelled == {SLUID: JOB_UID} and bridge.state.dirty


def test_a_pod_deleted_while_its_job_lives_is_made_again_and_nothing_is_cancelled(
        tmp_path: Path) -> None:
    gangs, bridge = table(tmp_path)
    bridge.kube.jobs[("ml", "train")] = {"metadata": {"uid": JOB_UID}}
    gangs.on_pod("ADDED", pod(POD_UID))
    gangs.on_pod("DELETED", pod(POD_UID))
    assert cancels(bridge) == [] and bridge.state.gangs == {JOB_UID: SLUID}


def test_a_job_being_deleted_or_replaced_by_another_of_its_name_is_gone(tmp_path: Path) -> None:
    for other in ({"uid": JOB_UID, "deletionTimestamp": "2026-12-05T03:00:00Z"},
                  {"uid": "job-uid-2"}):
        gangs, bridge = table(tmp_path / other["uid"])
        bridge.kube.jobs[("ml", "train")] = {"metadata": other}
        gangs.on_pod("ADDED", pod(POD_UID))
        gangs.on_pod("DELETED", pod(POD_UID))
        assert cancels(bridge) == [SLUID], other


def test_a_gang_with_pods_left_is_not_gone(tmp_path: Path) -> None:
    gangs, bridge = table(tmp_path)
    gangs.on_pod("ADDED", pod("a"))
    gangs.on_pod("ADDED", pod("b"))
    gangs.on_pod("DELETED", pod("a"))
    assert cancels(bridge) == []
    gangs.on_pod("DELETED", pod("b"))
    assert cancels(bridge) == [SLUID]


def test_a_bare_pods_gang_is_gone_with_the_pod(tmp_path: Path) -> None:
    gangs, bridge = table(tmp_path, kind="Pod", key=POD_UID)
    gangs.on_pod("ADDED", pod(POD_UID, owner=None))
    gangs.on_pod("DELETED", pod(POD_UID, owner=None))
    assert cancels(bridge) == [SLUID]


def test_a_list_after_a_restart_ends_the_gangs_whose_pods_were_deleted_unseen(
        tmp_path: Path) -> None:
    """The bridge was down while the Job and its pods were deleted: the state file still has
    the gang, the first list names none of its pods."""
    gangs, bridge = table(tmp_path)
    bridge.state.gangs["live-job"] = "s00000000000J2"
    bridge.state.refs["live-job"] = ["Job", "ml", "live"]
    bridge.kube.jobs[("ml", "live")] = {"metadata": {"uid": "live-job"}}
    gangs.on_pod("ADDED", pod("p2", owner="live-job"))
    gangs.reconcile({"p2"})
    assert cancels(bridge) == [SLUID]
    assert set(bridge.state.gangs) == {"live-job"}


def test_a_pod_the_list_does_not_name_is_taken_as_deleted(tmp_path: Path) -> None:
    """A watch that fell too far behind lists again: what vanished meanwhile is gone."""
    gangs, bridge = table(tmp_path)
    gangs.on_pod("ADDED", pod(POD_UID))
    gangs.reconcile(set())
    assert POD_UID not in gangs.pods and cancels(bridge) == [SLUID]


def test_an_old_state_file_without_refs_is_never_guessed_gone(tmp_path: Path) -> None:
    gangs, bridge = table(tmp_path)
    bridge.state.refs.clear()
    gangs.reconcile(set())
    assert cancels(bridge) == [] and bridge.state.gangs == {JOB_UID: SLUID}


def test_an_old_state_files_gang_learns_what_it_is_from_its_pods(tmp_path: Path) -> None:
    gangs, bridge = table(tmp_path)
    bridge.state.refs.clear()
    gangs.on_pod("ADDED", pod(POD_UID))
    assert bridge.state.refs == {JOB_UID: ["Job", "ml", "train"]}
    gangs.on_pod("DELETED", pod(POD_UID))
    assert cancels(bridge) == [SLUID]


def test_a_run_of_a_cancelled_gang_is_kept_for_the_cancels_kill(tmp_path: Path) -> None:
    """The job started before the cancel was decided: its run is known, so the KillRun that
    follows reports the exit and the epilog (the nodes do not stay COMPLETING)."""
    gangs, bridge = table(tmp_path)
    gangs.reconcile(set())
    gangs.launch("n1", {"job_sluid": SLUID, "run_sluid": "s00000000000R1", "nodes": ["n1"],
                        "batch_host": True})
    assert bridge.state.runs["s00000000000R1"] == Run("s00000000000R1", SLUID, JOB_UID, ["n1"],
                                                      batch_node="n1")


def test_the_state_file_keeps_refs_and_the_newest_cancelled(tmp_path: Path) -> None:
    state = BridgeState.load(tmp_path)
    for i in range(CANCELLED_KEPT + 5):
        state.gangs[f"k{i}"], state.refs[f"k{i}"] = f"job{i}", ["Job", "ml", f"j{i}"]
        state.forget_gang(f"k{i}")
    state.gangs["kept"], state.refs["kept"] = "jobk", ["Pod", "ml", "p"]
    state.save()
    again = BridgeState.load(tmp_path)
    assert again.refs == {"kept": ["Pod", "ml", "p"]}
    assert len(again.cancelled) == CANCELLED_KEPT
    assert list(again.cancelled)[-1] == f"job{CANCELLED_KEPT + 4}" and "job0" not in again.cancelled


def test_a_jobs_last_pod_gone_cancels_when_its_controller_makes_no_pod_again(
        tmp_path: Path) -> None:
    # Suspended, finished (a deadline passed: the controller deleted the running pods), its
    # namespace being deleted: the Job lives a while, but no pod comes back (red team).
    cases: dict[str, tuple[dict[str, Any], set[str]]] = {
        "suspended": ({"spec": {"suspend": True}}, set()),
        "finished": ({"status": {"conditions": [{"type": "FailureTarget",
                                                 "status": "True"}]}}, set()),
        "namespace deleted": ({}, {"ml"}),
    }
    for case, (extra, ending) in cases.items():
        gangs, bridge = table(tmp_path / case.replace(" ", "-"))
        bridge.kube.jobs[("ml", "train")] = {"metadata": {"uid": JOB_UID}, **extra}
        bridge.kube.ending = ending
        gangs.on_pod("ADDED", pod(POD_UID))
        gangs.on_pod("DELETED", pod(POD_UID))
        assert cancels(bridge) == [SLUID], case
        assert JOB_UID not in bridge.state.gangs, case
