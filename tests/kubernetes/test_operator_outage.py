"""The operator while its Sluice's Kafka does not take its requests, on the real local control
plane: a drain it cannot send must not end it (found by a red team: the client's ApiError was
not the Kubernetes error its loop caught)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.harness import LocalSystem, free_port
from tests.e2e.ledger import TEST_USER, job_workdir
from tests.kubernetes.conftest import KubeCluster
from tests.kubernetes.rbac import role_kubeconfig
from tests.kubernetes.test_operator import _crd

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def system(kafka_bootstrap: str, tmp_path: Path, unique: str,
           kube_cluster: KubeCluster) -> Iterator[LocalSystem]:
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"k8q{unique}")
    try:
        yield local
    finally:
        local.stop()


def test_the_operator_outlives_a_drain_its_kafka_does_not_take(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    system.start_core()
    system.start_node("lost-gpu-0", 2, 4096)
    system.wait_nodes_idle(1)
    sluid = system.client.sluids.new()
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
        "user": TEST_USER, "command": ["sleep", "300"], "workdir": job_workdir(),
        "nodelist": "lost-gpu-0"}})
    system.wait(lambda: system.client.get(f"/v1/jobs/{sluid}")["job"]["state"] == "RUNNING",
                60, "the job to start")
    _crd(kube_cluster)
    # The operator's Kafka is a port nobody listens on (a broker out): its views answer, so
    # it decides to drain the busy node of a set scaled to 0, and cannot send the drain.
    dead = f"127.0.0.1:{free_port()}"
    system.start("operator", "operator", "--kubeconfig",
                 str(role_kubeconfig(kube_cluster, "operator-rbac.yaml")),
                 "--interval", "1", env={"KAFKA_BOOTSTRAP": dead})
    client.CustomObjectsApi(kube_cluster.api).create_namespaced_custom_object(
        "sluice.dev", "v1alpha1", namespace, "sluiceclusters", {
            "apiVersion": "sluice.dev/v1alpha1", "kind": "SluiceCluster",
            "metadata": {"name": "lost"},
            "spec": {"image": "sluice:1", "kafkaBootstrap": dead,
                     "prefix": system.settings.prefix, "api": system.settings.api,
                     "nodeSets": [{"name": "gpu", "replicas": 1, "minReplicas": 0,
                                   "maxReplicas": 0}]}})
    time.sleep(45)  # a send waits 30 s for the broker
    assert system.processes["operator"].poll() is None, system.log_tail()
    apps = client.AppsV1Api(kube_cluster.api)
    assert apps.read_namespaced_deployment("lost-worker", namespace)  # it went on applying
