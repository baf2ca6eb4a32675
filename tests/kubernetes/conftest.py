"""The Kubernetes control plane for these tests: an existing cluster from ``KUBECONFIG`` if
set, else the local one (etcd, kube-apiserver, kube-controller-manager, kwok) built from Go
modules and started once per session with 8 kwok nodes in two topology blocks, each with a
ResourceSlice of 8 GPUs (``publish_gpus``: what the NVIDIA DRA driver would publish).

The local one is opt-in: ``SLUICE_K8S_TESTS=1`` (its first build takes tens of minutes;
``python -m infra.kubernetes build`` does it ahead, CI caches it).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes import config as kube_config

from infra.kubernetes import create_nodes, publish_gpus, start, stop

NODES, BLOCKS = 8, 2
PORT = int(os.environ.get("SLUICE_K8S_PORT", "20712"))


@dataclass(frozen=True)
class KubeCluster:
    kubeconfig: Path
    api: Any  # ApiClient
    nodes: list[str]

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @property
    def batch(self) -> client.BatchV1Api:
        return client.BatchV1Api(self.api)


@pytest.fixture(scope="session")
def kube_cluster() -> Iterator[KubeCluster]:
    existing = os.environ.get("KUBECONFIG", "")
    if existing:
        path = Path(existing)
        nodes = create_nodes(path, NODES, BLOCKS)
        publish_gpus(path, nodes)
        loader: Any = kube_config
        yield KubeCluster(path, loader.new_client_from_config(str(path)), nodes)
        return
    if os.environ.get("SLUICE_K8S_TESTS") != "1":
        pytest.skip("the local Kubernetes control plane is opt-in: SLUICE_K8S_TESTS=1 "
                    "(or KUBECONFIG for an existing cluster with kwok)")
    folder = Path(f"/tmp/k8s-pytest-{os.getpid()}")
    cluster = start(folder, port=PORT, nodes=NODES, blocks=BLOCKS)
    loader = kube_config
    try:
        publish_gpus(cluster.kubeconfig, [f"kwok-node-{i}" for i in range(NODES)])
        yield KubeCluster(cluster.kubeconfig,
                          loader.new_client_from_config(str(cluster.kubeconfig)),
                          [f"kwok-node-{i}" for i in range(NODES)])
    finally:
        stop(folder)


NAMESPACE_USER = "root"
"""The ``sluice.dev/user`` of the tests' namespaces (an administrator's explicit choice; the
bridge refuses the pods of a namespace without one, ``NoSluiceUser``: test_bridge_tenants)."""


def mapped_namespace(user: str = NAMESPACE_USER) -> dict[str, Any]:
    """A new Namespace's body: a fresh name, annotated ``sluice.dev/user``."""
    return {"metadata": {"name": f"k8s-{uuid.uuid4().hex[:8]}",
                         "annotations": {"sluice.dev/user": user}}}


@pytest.fixture
def namespace(kube_cluster: KubeCluster) -> Iterator[str]:
    body = mapped_namespace()
    name = body["metadata"]["name"]
    kube_cluster.core.create_namespace(body)
    deadline = time.monotonic() + 120  # the service-account controller makes "default"
    while not kube_cluster.core.list_namespaced_service_account(name).items:
        assert time.monotonic() < deadline, f"no service account in {name}"
        time.sleep(0.2)
    try:
        yield name
    finally:
        for job in kube_cluster.batch.list_namespaced_job(name).items:
            kube_cluster.batch.delete_namespaced_job(job.metadata.name, name,
                                                     propagation_policy="Background")
        kube_cluster.core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        kube_cluster.core.delete_namespace(name)
