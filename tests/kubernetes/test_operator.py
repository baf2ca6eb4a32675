"""The operator on the real local control plane: a SluiceCluster becomes its objects, pending
demand scales its NodeSet, deleting it removes what it made (the garbage collector)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from agents.operator.objects import DEFAULT_IMAGE
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER, job_workdir
from tests.kubernetes.conftest import KubeCluster
from tests.kubernetes.rbac import role_kubeconfig

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
    system.start("operator", "operator", "--kubeconfig",
                 str(role_kubeconfig(kube_cluster, "operator-rbac.yaml")),
                 "--interval", "1")
    custom = client.CustomObjectsApi(kube_cluster.api)
    custom.create_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                           "sluiceclusters", {
        "apiVersion": "sluice.dev/v1alpha1", "kind": "SluiceCluster",
        "metadata": {"name": "demo"},
        # No image: the CRD's default, the name infra.image builds. Keys from a Secret.
        "spec": {"kafkaBootstrap": system.settings.bootstrap, "keysSecret": "demo-keys",
                 "prefix": system.settings.prefix,  # the operator's own Sluice: it scales it
                 "api": system.settings.api, "nodeSets": [
                     {"name": "gpu", "replicas": 1, "minReplicas": 1, "maxReplicas": 6,
                      "cpus": 4, "memMB": 8192, "gpus": 8}]}})
    apps = client.AppsV1Api(kube_cluster.api)
    system.wait(lambda: _sts_replicas(kube_cluster, namespace, "demo-gpu") == 1, 120,
                "the NodeSet's StatefulSet at its minimum")
    names = {d.metadata.name for d in apps.list_namespaced_deployment(namespace).items}
    assert names == {"demo-worker", "demo-projections"}
    # The API server took the pods' security contexts, init container and key volumes.
    pod = apps.read_namespaced_stateful_set("demo-gpu", namespace).spec.template.spec
    (container,) = pod.containers
    assert container.image == DEFAULT_IMAGE
    assert container.security_context.run_as_user == 0
    assert container.security_context.allow_privilege_escalation is False
    assert container.security_context.capabilities.add == ["SETUID", "SETGID", "KILL"]
    assert {v.name for v in pod.volumes} == {"state", "keys"}
    worker = apps.read_namespaced_deployment("demo-worker", namespace).spec.template.spec
    init = worker.init_containers[0].security_context
    assert (init.run_as_user, init.capabilities.add) == (10001, None)  # no root, no capability
    assert worker.security_context.fs_group == 10001
    assert worker.security_context.seccomp_profile.type == "RuntimeDefault"
    assert worker.automount_service_account_token is False
    assert worker.containers[0].security_context.run_as_non_root is True
    assert worker.containers[0].security_context.read_only_root_filesystem is True

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


def _cluster(system: LocalSystem, name: str, nodeset: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "sluice.dev/v1alpha1", "kind": "SluiceCluster",
            "metadata": {"name": name},
            "spec": {"image": "sluice:1", "kafkaBootstrap": system.settings.bootstrap,
                     "prefix": system.settings.prefix,
                     "api": system.settings.api, "nodeSets": [nodeset]}}


def _job(system: LocalSystem, sluid: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/jobs/{sluid}")["job"])


def _node(system: LocalSystem, name: str) -> dict[str, Any]:
    return dict(system.client.get(f"/v1/nodes/{name}")["node"])


def test_a_scale_down_drains_a_busy_node_and_removes_it_only_once_its_job_ended(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    # The NodeSet's three Sluice nodes are node daemons here (kwok runs no container): the
    # StatefulSet's pods drain-gpu-0..2 stand for them.
    system.start_core()
    for ordinal in range(3):
        system.start_node(f"drain-gpu-{ordinal}", 2, 4096)
    system.wait_nodes_idle(3)
    _crd(kube_cluster)
    custom = client.CustomObjectsApi(kube_cluster.api)
    custom.create_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                           "sluiceclusters", _cluster(system, "drain", {
        "name": "gpu", "replicas": 3, "minReplicas": 0, "maxReplicas": 3, "cpus": 2}))
    # A job on the highest ordinal, the first a scale-down removes.
    sluid = system.client.sluids.new()
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
        "user": TEST_USER, "command": ["sleep", "25"], "workdir": job_workdir(),
        "nodelist": "drain-gpu-2"}})
    system.wait(lambda: _job(system, sluid)["state"] == "RUNNING", 60, "the job to start")
    system.start("operator", "operator", "--kubeconfig",
                 str(role_kubeconfig(kube_cluster, "operator-rbac.yaml")),
                 "--interval", "1")
    # Demand is now one busy node: the operator drains drain-gpu-2 and keeps 3 replicas.
    system.wait(lambda: _node(system, "drain-gpu-2")["service"] == "DRAIN", 60,
                "the busy node drained")
    # The drain is sent in the first pass, before that pass applies the StatefulSet.
    system.wait(lambda: _sts_replicas(kube_cluster, namespace, "drain-gpu") == 3, 60,
                "the NodeSet's StatefulSet")
    while _job(system, sluid)["state"] == "RUNNING":
        assert _sts_replicas(kube_cluster, namespace, "drain-gpu") == 3, \
            "a replica was removed while its node ran a job"
        time.sleep(1.0)
    job = _job(system, sluid)
    assert (job["state"], job["exit_code"]) == ("COMPLETED", 0), job
    system.wait(lambda: _sts_replicas(kube_cluster, namespace, "drain-gpu") == 0, 60,
                "the NodeSet scaled down once the job ended")
    cr = custom.get_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                             "sluiceclusters", "drain")
    conditions = {c["type"]: c for c in cr["status"]["conditions"]}
    assert conditions["Scaled"]["status"] == "True", conditions
    # Demand for three nodes again: the set grows back and the node it drained is resumed.
    wide = system.client.sluids.new()
    system.client.send(wide, "SubmitJob", {"job_sluid": wide, "spec": {
        "user": TEST_USER, "nodes_min": 3, "command": ["true"], "workdir": job_workdir()}})
    system.wait(lambda: _sts_replicas(kube_cluster, namespace, "drain-gpu") == 3, 60,
                "the NodeSet scaled up again")
    system.wait(lambda: _node(system, "drain-gpu-2")["service"] == "IDLE", 60,
                "the drained node resumed")
    system.wait(lambda: _job(system, wide)["state"] == "COMPLETED", 60,
                "the three-node job ran")


def test_a_worker_image_upgrade_is_a_recreate_rollout_that_loses_no_job(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    system.start_core()
    nodes = system.start_nodes(2, 2, 4096)
    system.wait_nodes_idle(len(nodes))
    _crd(kube_cluster)
    system.start("operator", "operator", "--kubeconfig",
                 str(role_kubeconfig(kube_cluster, "operator-rbac.yaml")),
                 "--interval", "1")
    custom = client.CustomObjectsApi(kube_cluster.api)
    custom.create_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                           "sluiceclusters", _cluster(system, "up", {
        "name": "cpu", "replicas": 2, "minReplicas": 2, "maxReplicas": 2, "cpus": 2}))
    apps = client.AppsV1Api(kube_cluster.api)

    def worker_image() -> str | None:
        try:
            deployment = apps.read_namespaced_deployment("up-worker", namespace)
        except ApiException:
            return None
        assert deployment.spec.strategy.type == "Recreate"  # never two workers at once
        return str(deployment.spec.template.spec.containers[0].image)

    assert system.wait(lambda: worker_image() == "sluice:1", 60, "the worker Deployment")
    jobs = []
    for i in range(6):
        sluid = system.client.sluids.new()
        system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
            "user": TEST_USER, "name": f"up{i}", "command": ["sleep", "3"],
            "workdir": job_workdir()}})
        jobs.append(sluid)
    custom.patch_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                          "sluiceclusters", "up", {"spec": {"image": "sluice:2"}})
    system.wait(lambda: worker_image() == "sluice:2", 60, "the rollout of the new image")
    # What the Recreate rollout does to the worker pod: the old one gets SIGTERM and exits,
    # then the new one starts (kwok runs no container, so the local worker stands for it).
    system.kill("worker", signal.SIGTERM)  # waits for it to exit
    system.start("worker", "worker", "--loglevel", "info")
    def all_completed() -> list[dict[str, Any]] | None:
        now = [_job(system, s) for s in jobs]
        return now if all(j["state"] == "COMPLETED" for j in now) else None

    ended = system.wait(all_completed, 180, "every job to complete across the upgrade")
    assert len(ended) == len(jobs)
    assert all(len(j["runs"]) == 1 for j in ended), [j["runs"] for j in ended]
