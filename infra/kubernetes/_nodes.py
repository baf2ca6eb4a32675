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

__all__ = ["ACCELERATOR_LABEL", "GPU_CLASS", "KWOK_ANNOTATION", "create_nodes", "node_manifest",
           "publish_gpus"]

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
GPU_DRIVER = "gpu.nvidia.com"
GPU_CLASS: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
    "metadata": {"name": GPU_DRIVER},
    "spec": {"selectors": [{"cel": {"expression": (
        f"device.driver == '{GPU_DRIVER}' && device.attributes['{GPU_DRIVER}'].type == 'gpu'")}}]},
}
"""The DeviceClass the NVIDIA DRA driver installs (whole GPUs of its driver)."""
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


def publish_gpus(kubeconfig: Path, names: list[str], gpus: int = 8) -> None:
    """Stand in for the NVIDIA DRA driver: its DeviceClass, and for each node a ResourceSlice
    of ``gpus`` devices (``gpu-<i>``, typed ``gpu``, H100, two NVLink halves), as the driver's
    kubelet plugin publishes them on a real node (existing objects are left as they are)."""
    loader: Any = _config
    api = client.ResourceV1Api(loader.new_client_from_config(str(kubeconfig)))
    body: Any = GPU_CLASS
    try:
        api.create_device_class(body)
    except ApiException as exc:
        if exc.status != 409:
            raise
    for name in names:
        devices = [{"name": f"gpu-{i}", "attributes": {
            "type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100 80GB HBM3"},
            "index": {"int": i}, "uuid": {"string": f"GPU-{name}-{i}"},
            "driverVersion": {"version": "580.65.6"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci-{2 * i // max(gpus, 1)}"}},
            "capacity": {"memory": {"value": "80Gi"}}} for i in range(gpus)]
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-{GPU_DRIVER}"},
                "spec": {"driver": GPU_DRIVER, "nodeName": name,
                         "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                         "devices": devices}}
        try:
            api.create_resource_slice(body)
        except ApiException as exc:
            if exc.status != 409:
                raise
