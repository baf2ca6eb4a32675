"""Binding a run's slots to a gang's pods, and a run's end."""

from __future__ import annotations

from typing import Any

from agents.bridge.slots import Run, assignments, outcome


def _pod(uid: str, index: int, node: str = "", phase: str = "Pending",
         deleting: bool = False, code: int = 0) -> dict[str, Any]:
    meta: dict[str, Any] = {"uid": uid, "name": f"p-{index}", "annotations": {
        "batch.kubernetes.io/job-completion-index": str(index)}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {"phase": phase}
    if code:
        status["containerStatuses"] = [{"state": {"terminated": {"exitCode": code}}}]
    return {"metadata": meta, "spec": {"nodeName": node}, "status": status}


def test_pods_go_to_free_slots_in_index_order() -> None:
    run = Run("r", "j", "g", ["n1", "n2"])
    pods = {"b": _pod("b", 1), "a": _pod("a", 0)}
    assert assignments(run, pods) == [("a", "n1"), ("b", "n2")]


def test_a_deleted_pod_frees_its_slot_for_its_replacement() -> None:
    run = Run("r", "j", "g", ["n1", "n2"], slots={"n1": "a", "n2": "b"})
    pods = {"a": _pod("a", 0, "n1", "Running"), "b": _pod("b", 1, "n2", deleting=True),
            "c": _pod("c", 1)}
    assert assignments(run, pods) == [("c", "n2")]


def test_no_binding_once_the_run_reported_its_end() -> None:
    run = Run("r", "j", "g", ["n1"], exit_reported=True)
    assert assignments(run, {"a": _pod("a", 0)}) == []


def test_outcome_waits_for_every_pod_and_names_a_failure() -> None:
    run = Run("r", "j", "g", ["n1", "n2"], slots={"n1": "a", "n2": "b"})
    pods = {"a": _pod("a", 0, "n1", "Succeeded"), "b": _pod("b", 1, "n2", "Running")}
    assert outcome(run, pods) is None
    pods["b"] = _pod("b", 1, "n2", "Succeeded")
    assert outcome(run, pods) == (0, "")
    pods["b"] = _pod("b", 1, "n2", "Failed", code=3)
    assert outcome(run, pods) == (3, "pod p-1 on n2 failed")


def test_a_pod_whose_index_annotation_is_not_ascii_digits_goes_last_without_a_crash() -> None:
    run = Run("r", "j", "g", ["n1", "n2", "n3"])
    odd = [_pod("x", 0), _pod("y", 0)]  # anyone who can create pods writes their annotations
    odd[0]["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] = "²"
    odd[1]["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] = "9" * 5000
    pods = {"x": odd[0], "y": odd[1], "a": _pod("a", 0)}
    assert assignments(run, pods) == [("a", "n1"), ("x", "n2"), ("y", "n3")]
