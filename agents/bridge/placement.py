"""Which nodes a pod may go to, as kube-scheduler's filters would say: its ``nodeSelector``,
its required node affinity, and the nodes' ``NoSchedule``/``NoExecute`` taints it does not
tolerate. The bridge submits the others as the job's ``--exclude`` (``GangTable._submit``).

A cordoned node (``node.kubernetes.io/unschedulable``) and a not-ready one are not offered to
Sluice at all (``agents.bridge.nodes``), so their taints are not looked at here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.bridge.nodes import KubeNode

__all__ = ["allowed", "excluded_nodes"]

_HARD = ("NoSchedule", "NoExecute")


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' ``Toleration.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if (toleration.get("operator") or "Equal") == "Exists":
        return not key or key == taint.get("key")
    return key == taint.get("key") and (toleration.get("value") or "") == (
        taint.get("value") or "")


def _expression(labels: Mapping[str, str], expr: Mapping[str, Any]) -> bool:
    key, op = expr.get("key", ""), expr.get("operator", "")
    values = [str(v) for v in expr.get("values") or []]
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op in ("Gt", "Lt") and key in labels and len(values) == 1:
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _term(node: KubeNode, term: Mapping[str, Any]) -> bool:
    """One nodeSelectorTerm: all its expressions (labels) and fields (the name) hold."""
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches no node (Kubernetes)
    name = {"metadata.name": node.name}
    return all(_expression(node.labels, e) for e in exprs) and all(
        e.get("key") == "metadata.name" and _expression(name, e) for e in fields)


def allowed(pod: Mapping[str, Any], node: KubeNode) -> bool:
    """May kube-scheduler put the pod on the node (selector, required affinity, taints)."""
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    if any(node.labels.get(k) != v for k, v in selector.items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if terms and not any(_term(node, t) for t in terms):
        return False
    tolerations = spec.get("tolerations") or []
    return all(any(_tolerates(t, taint) for t in tolerations)
               for taint in node.taints if taint.get("effect") in _HARD)


def excluded_nodes(pod: Mapping[str, Any], nodes: Mapping[str, KubeNode]) -> list[str]:
    """The known nodes the pod may not go to, sorted."""
    return sorted(name for name, node in nodes.items() if not allowed(pod, node))
