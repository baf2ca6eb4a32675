"""kwok's fake nodes: Node objects kwok manages (annotation ``kwok.x-k8s.io/node: fake``).

Nodes are named ``kwok-node-<i>`` and split into ``blocks`` equal topology blocks with
Topograph's label ``network.topology.nvidia.com/accelerator: block-<b>`` (the NVLink domain,
which the bridge turns into a Sluice block topology).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes import config as _config
from kubernetes.client.exceptions import ApiException

__all__ = ["ACCELERATOR_LABEL", "KWOK_ANNOTATION", "create_nodes", "node_manifest"]

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
ACCELERATOR_LABEL = "network.topology.nvidia.com/accelerator"


def node_manifest(name: str, block: str, cpus: int = 32, mem_gi: int = 256,
                  gpus: int = 8) -> dict[str, Any]:
    """One fake node's manifest."""
    resources = {"cpu": str(cpus), "memory": f"{mem_gi}Gi", "pods": "110",
                 "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name,
                     "annotations": {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
                     "labels": {"kubernetes.io/hostname": name, "type": "kwok",
                                ACCELERATOR_LABEL: block}},
        "status": {"capacity": resources, "allocatable": resources},
    }


def create_nodes(kubeconfig: Path, count: int, blocks: int = 1, prefix: str = "kwok-node-",
                 gpus: int = 8) -> list[str]:
    """Create ``count`` fake nodes in ``blocks`` blocks (existing ones are left as they are)."""
    loader: Any = _config  # the client's loaders carry no annotations
    api = client.CoreV1Api(loader.new_client_from_config(str(kubeconfig)))
    body: Any
    per_block = max(1, -(-count // max(1, blocks)))
    names = []
    for i in range(count):
        name = f"{prefix}{i}"
        names.append(name)
        try:
            body = node_manifest(name, f"block-{i // per_block}", gpus=gpus)
            api.create_node(body)
        except ApiException as exc:
            if exc.status != 409:
                raise
    return names
