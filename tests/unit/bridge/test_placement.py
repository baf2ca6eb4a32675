"""Which nodes a pod may go to (agents/bridge/placement.py): nodeSelector, required node
affinity, NoSchedule/NoExecute taints and tolerations, as kube-scheduler's filters say. The
bridge ignored all three: a pod of any namespace was bound to a node tainted for another
tenant, or outside the node pool its namespace's selector confines it to (red team)."""

from __future__ import annotations

from typing import Any

import pytest

from agents.bridge.gang import Gang, job_spec
from agents.bridge.nodes import node_view
from agents.bridge.placement import allowed, excluded_nodes


def _node(name: str, labels: dict[str, str] | None = None,
          taints: list[dict[str, str]] | None = None) -> Any:
    return node_view({"metadata": {"name": name, "labels": labels or {}},
                      "spec": {"taints": taints or []},
                      "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                 "allocatable": {"cpu": "4", "memory": "8Gi"}}})


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ml", "uid": "u"},
            "spec": {"containers": [{"name": "m"}], **spec}}


DEDICATED = {"key": "dedicated", "value": "team-b", "effect": "NoSchedule"}


def test_a_taint_keeps_out_a_pod_that_does_not_tolerate_it() -> None:
    nodes = {"a": _node("a"), "b": _node("b", taints=[DEDICATED]),
             "c": _node("c", taints=[{"key": "x", "effect": "PreferNoSchedule"}])}
    assert excluded_nodes(_pod(), nodes) == ["b"]  # PreferNoSchedule is a preference
    assert excluded_nodes(_pod(tolerations=[{"key": "dedicated", "value": "team-b",
                                              "effect": "NoSchedule"}]), nodes) == []
    assert excluded_nodes(_pod(tolerations=[{"key": "dedicated", "value": "team-a"}]),
                          nodes) == ["b"]
    assert excluded_nodes(_pod(tolerations=[{"key": "dedicated", "operator": "Exists"}]),
                          nodes) == []
    assert excluded_nodes(_pod(tolerations=[{"operator": "Exists"}]), nodes) == []
    assert excluded_nodes(_pod(tolerations=[{"key": "dedicated", "operator": "Exists",
                                              "effect": "NoExecute"}]), nodes) == ["b"]


@pytest.mark.parametrize(("spec", "fits"), [
    ({"nodeSelector": {"pool": "gpu"}}, True),
    ({"nodeSelector": {"pool": "cpu"}}, False),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "In", "values": ["cpu"]}]},
            {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["3"]}]}]}}}},
     True),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "NotIn", "values": ["gpu"]}]}]}}}}, False),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}}, True),
])
def test_selector_and_required_affinity(spec: dict[str, Any], fits: bool) -> None:
    assert allowed(_pod(**spec), _node("n1", {"pool": "gpu", "gen": "4"})) is fits


def test_the_excluded_nodes_are_the_jobs_exclude() -> None:
    spec = job_spec(Gang("k", "Pod", "ml", "p", 1), _pod(), {}, user="alice",
                    exclude=["b", "d"])
    assert spec["exclude"] == "b,d"
