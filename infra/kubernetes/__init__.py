"""A real Kubernetes control plane without Docker: etcd, kube-apiserver,
kube-controller-manager and kwok built from their Go modules, local processes.

Public API (see docs/kubernetes.md)::

    ensure_built(log=None) -> dict[str, Path]     build what is missing (cached per version)
    start(folder, port=20712, nodes=0, blocks=1) -> LocalCluster   start all four, fake nodes
    stop(folder) -> list[str]                     stop what start() started (by PID)
    create_nodes(kubeconfig, count, blocks)       more kwok nodes in topology blocks
    publish_gpus(kubeconfig, names, gpus=8)       a GPU DeviceClass and each node's ResourceSlice

``python -m infra.kubernetes build|start|stop|status --dir DIR`` does the same from a shell.
"""

from __future__ import annotations

from infra.kubernetes._build import PIECES, binaries, cache_root, ensure_built
from infra.kubernetes._cluster import DEFAULT_PORT, LocalCluster, built, start, stop
from infra.kubernetes._errors import KubernetesSetupError
from infra.kubernetes._nodes import (
    ACCELERATOR_LABEL,
    GPU_CLASS,
    KWOK_ANNOTATION,
    create_nodes,
    publish_gpus,
)

__all__ = [
    "ACCELERATOR_LABEL",
    "DEFAULT_PORT",
    "GPU_CLASS",
    "KWOK_ANNOTATION",
    "PIECES",
    "KubernetesSetupError",
    "LocalCluster",
    "binaries",
    "built",
    "cache_root",
    "create_nodes",
    "ensure_built",
    "publish_gpus",
    "start",
    "stop",
]
