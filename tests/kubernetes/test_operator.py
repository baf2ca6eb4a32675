"""The operator on the real local control plane: a SluiceCluster becomes its objects, pending
demand scales its NodeSet, deleting it removes what it made (the garbage collector)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.harness import LocalSystem
from tests.kubernetes.conftest import KubeCluster

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

MANIFESTS = Path(__file__).resolve().parents[2] / "infra" / "kubernetes" / "manifests"


@pytest.fixture
def system(kafka_bootstrap: str, tmp_path: Path, unique: str,
           kube_cluster: KubeCluster) -> Iterator[LocalSystem]:
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"k8s{unique}")
    try:
        yield local
    finally:
        local.stop()


def _crd(kube: KubeCluster) -> None:
    ext = client.ApiextensionsV1Api(kube.api)
    body = yaml.safe_load((MANIFESTS / "sluicecluster-crd.yaml").read_text())
    try:
        ext.create_custom_resource_definition(body)
    except ApiException as exc:
        if exc.status != 409:
            raise
    custom = client.CustomObjectsApi(kube.api)
    deadline = time.monotonic() + 60
    while True:  # established: the API serves the new resource
        try:
            custom.list_cluster_custom_object("sluice.dev", "v1alpha1", "sluiceclusters")
            return
        except ApiException:
            assert time.monotonic() < deadline, "the CRD was not served"
            time.sleep(0.5)


def _sts_replicas(kube: KubeCluster, namespace: str, name: str) -> int | None:
    try:
        return int(client.AppsV1Api(kube.api).read_namespaced_stateful_set(
            name, namespace).spec.replicas)
    except ApiException:
        return None


def test_a_sluice_cluster_brings_up_its_objects_scales_and_goes_away(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    system.start_core()
    _crd(kube_cluster)
    system.start("operator", "operator", "--kubeconfig", str(kube_cluster.kubeconfig),
                 "--interval", "1")
    custom = client.CustomObjectsApi(kube_cluster.api)
    custom.create_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                           "sluiceclusters", {
        "apiVersion": "sluice.dev/v1alpha1", "kind": "SluiceCluster",
        "metadata": {"name": "demo"},
        "spec": {"image": "sluice:test", "kafkaBootstrap": system.settings.bootstrap,
                 "api": system.settings.api, "nodeSets": [
                     {"name": "gpu", "replicas": 1, "minReplicas": 1, "maxReplicas": 6,
                      "cpus": 4, "memMB": 8192, "gpus": 8}]}})
    apps = client.AppsV1Api(kube_cluster.api)
    system.wait(lambda: _sts_replicas(kube_cluster, namespace, "demo-gpu") == 1, 120,
                "the NodeSet's StatefulSet at its minimum")
    names = {d.metadata.name for d in apps.list_namespaced_deployment(namespace).items}
    assert names == {"demo-worker", "demo-projections"}

    def status() -> dict[str, Any] | None:
        cr = custom.get_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                                 "sluiceclusters", "demo")
        conditions = {c["type"]: c["status"] for c in cr.get("status", {}).get("conditions", [])}
        return conditions if conditions.get("Applied") == "True" else None

    conditions = system.wait(status, 60, "the status conditions")
    assert conditions["DemandKnown"] == "True"

    # Pending demand: a job of 4 nodes that nothing can run yet.
    sluid = system.client.sluids.new()
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
        "user": "alice", "nodes_min": 4, "command": ["true"], "workdir": "/tmp"}})
    system.wait(lambda: _sts_replicas(kube_cluster, namespace, "demo-gpu") == 4, 120,
                "the NodeSet scaled to the pending demand")

    custom.delete_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                           "sluiceclusters", "demo")
    system.wait(lambda: _sts_replicas(kube_cluster, namespace, "demo-gpu") is None
                and not apps.list_namespaced_deployment(namespace).items, 120,
                "the garbage collector to remove what the resource made")
