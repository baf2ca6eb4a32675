"""Which pod goes to which node of a Sluice run, and when a run is over (pure functions).

A run (one ``LaunchRun`` per node of the allocation) has one **slot** per node; a slot holds
the uid of the pod bound there. A pod that is deleted (or being deleted) frees its slot, so the
pod its controller re-creates is bound to the same node. A run is over when every slot holds a
pod that ended; its exit code is 0 when all succeeded, else the first failure's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schemas.digits import INT_DIGITS, ascii_whole

__all__ = ["Run", "assignments", "live", "outcome", "terminal"]


@dataclass(slots=True)
class Run:
    """One Sluice run of a gang, as the bridge keeps it (saved in its state file)."""

    run_sluid: str
    job_sluid: str
    gang: str
    nodes: list[str]
    batch_node: str = ""
    slots: dict[str, str] = field(default_factory=dict)  # node → pod uid
    exit_reported: bool = False
    epilogs: list[str] = field(default_factory=list)  # nodes whose epilog was reported

    def as_json(self) -> dict[str, Any]:
        """The run as JSON for the state file."""
        return {"run_sluid": self.run_sluid, "job_sluid": self.job_sluid, "gang": self.gang,
                "nodes": self.nodes, "batch_node": self.batch_node, "slots": self.slots,
                "exit_reported": self.exit_reported, "epilogs": self.epilogs}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Run:
        """A run from the state file."""
        return cls(**data)


def terminal(pod: dict[str, Any]) -> bool:
    """True for a pod that ended (Succeeded or Failed)."""
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


def live(pod: dict[str, Any] | None) -> bool:
    """True for a pod that exists and is not being deleted."""
    return pod is not None and not pod.get("metadata", {}).get("deletionTimestamp")


def assignments(run: Run, pods: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """``(pod uid, node)`` bindings to make: free slots of ``run`` ← unbound pending pods.

    ``pods`` are the gang's pods by uid. A slot is free when it holds no pod, or a pod that is
    gone or being deleted (and did not end)."""
    if run.exit_reported:
        return []
    held = set()
    free = []
    for node in run.nodes:
        uid = run.slots.get(node, "")
        pod = pods.get(uid)
        if uid and (live(pod) or (pod is not None and terminal(pod))):
            held.add(uid)
        else:
            free.append(node)
    waiting = sorted(
        (uid for uid, pod in pods.items()
         if uid not in held and live(pod) and not terminal(pod)
         and not pod.get("spec", {}).get("nodeName")),
        key=lambda uid: _rank(pods[uid]))
    return list(zip(waiting, free, strict=False))


def _rank(pod: dict[str, Any]) -> tuple[int, str]:
    """Indexed Jobs' pods in index order (rank i on the run's i-th node), others by name."""
    meta = pod.get("metadata", {})
    index = (meta.get("annotations") or {}).get("batch.kubernetes.io/job-completion-index")
    rank = ascii_whole(index, INT_DIGITS) if isinstance(index, str) else None
    return (1 << 30 if rank is None else rank, str(meta.get("name", "")))


def outcome(run: Run, pods: dict[str, dict[str, Any]]) -> tuple[int, str] | None:
    """``(exit code, detail)`` once every slot's pod ended; None while one runs or waits."""
    codes = []
    for node in run.nodes:
        pod = pods.get(run.slots.get(node, ""))
        if pod is None or not terminal(pod):
            return None
        codes.append((node, pod))
    for node, pod in codes:
        if pod["status"]["phase"] == "Failed":
            return _exit_code(pod), f"pod {pod['metadata']['name']} on {node} failed"
    return 0, ""


def _exit_code(pod: dict[str, Any]) -> int:
    for status in pod.get("status", {}).get("containerStatuses") or []:
        code = ((status.get("state") or {}).get("terminated") or {}).get("exitCode")
        if code:
            return int(code)
    return 1
