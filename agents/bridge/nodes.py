"""A Kubernetes Node as the bridge sees it: ready or not, its sizes, its labels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.bridge.gang import GPU_RESOURCE
from agents.bridge.quantity import QuantityError, mem_mb, parse_quantity
from agents.node.daemon import NodeResources
from scheduler.shard.model import KUBERNETES_FEATURE

__all__ = ["GPU_PRODUCT_LABEL", "KubeNode", "node_view"]

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"  # NVIDIA GPU feature discovery's label


@dataclass(frozen=True, slots=True)
class KubeNode:
    """One Node: ready (condition Ready True and schedulable), resources, labels."""

    name: str
    ready: bool
    resources: NodeResources
    labels: dict[str, str]
    taints: tuple[dict[str, str], ...] = ()


def _amount(allocatable: dict[str, str], name: str) -> int:
    try:
        return int(parse_quantity(allocatable.get(name, "0")))
    except QuantityError:
        return 0


def node_view(obj: dict[str, Any], dra_gpus: int = 0) -> KubeNode:
    """The bridge's view of a Node object (the API's JSON); ``dra_gpus``: the GPU devices its
    ResourceSlices publish (the node has the more of those and its ``nvidia.com/gpu``)."""
    meta, spec, status = obj.get("metadata", {}), obj.get("spec", {}), obj.get("status", {})
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    ready = conditions.get("Ready") == "True" and not spec.get("unschedulable")
    allocatable = status.get("allocatable") or {}
    try:
        memory = mem_mb(allocatable.get("memory", "0"))
    except QuantityError:
        memory = 0
    labels = dict(meta.get("labels") or {})
    resources = NodeResources(cpus=_amount(allocatable, "cpu"), mem_mb=memory,
                              gpus=max(_amount(allocatable, GPU_RESOURCE), dra_gpus),
                              gpu_type=labels.get(GPU_PRODUCT_LABEL, "")[:64],
                              features=(KUBERNETES_FEATURE,))
    taints = tuple({k: str(t.get(k) or "") for k in ("key", "value", "effect")}
                   for t in spec.get("taints") or [])
    return KubeNode(meta.get("name", ""), ready, resources, labels, taints)
