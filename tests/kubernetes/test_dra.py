"""DRA on the real local control plane: pods whose GPUs come from ResourceClaims (made by the
resourceclaim controller from a ResourceClaimTemplate) become Sluice jobs of that many GPUs per
node; when the job starts, the bridge allocates each pod's claim to devices of the pod's node
(distinct from every other claim's) and reserves it for the pod, then binds the pod. A claim no
node could ever satisfy is named on the pods instead of becoming a job."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.harness import LocalSystem
from tests.kubernetes.conftest import KubeCluster
from tests.kubernetes.harness import LONG, bound_pods, start_bridged

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def system(kafka_bootstrap: str, tmp_path: Path, unique: str,
           kube_cluster: KubeCluster) -> Iterator[LocalSystem]:
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"dra{unique}")
    try:
        yield local
    finally:
        local.stop()


def template(name: str, count: int, selector: str = "") -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.nvidia.com", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}}}


def claim_job(name: str, pods: int, claim_template: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"parallelism": pods, "completions": pods, "completionMode": "Indexed",
                 "template": {"metadata": {"annotations": LONG}, "spec": {
                     "schedulerName": "sluice", "restartPolicy": "Never",
                     "resourceClaims": [{"name": "gpus",
                                         "resourceClaimTemplateName": claim_template}],
                     "containers": [{"name": "main", "image": "train:1", "resources": {
                         "requests": {"cpu": "2", "memory": "4Gi"},
                         "claims": [{"name": "gpus"}]}}]}}}}


def claims_of(kube: KubeCluster, namespace: str, job: str) -> dict[str, dict[str, Any]]:
    """Pod name → its generated claim (as the API's JSON) for the Job's bound pods."""
    resource = client.ResourceV1Api(kube.api)
    found = {}
    for pod in kube.core.list_namespaced_pod(namespace, label_selector=f"job-name={job}").items:
        for status in pod.status.resource_claim_statuses or []:
            claim = resource.read_namespaced_resource_claim(status.resource_claim_name,
                                                            namespace)
            found[pod.metadata.name] = kube.api.sanitize_for_serialization(claim)
    return found


def unscheduled_reason(kube: KubeCluster, namespace: str, selector: str = "") -> str | None:
    """``reason: message`` of the first pod (of ``selector``) the bridge says it cannot
    schedule (its PodScheduled condition False), else None."""
    for pod in kube.core.list_namespaced_pod(namespace, label_selector=selector).items:
        for cond in pod.status.conditions or []:
            if cond.type == "PodScheduled" and cond.status == "False":
                return f"{cond.reason}: {cond.message}"
    return None


def test_claimed_gpus_are_sluice_gpus_and_each_claim_gets_its_pods_node_devices(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    start_bridged(system, kube_cluster)
    resource = client.ResourceV1Api(kube_cluster.api)
    resource.create_namespaced_resource_claim_template(namespace, template("four", 4))
    # Two Jobs of 4-GPU pods on nodes of 8 GPUs: Sluice may pack them two to a node, so the
    # claims on one node must get different devices.
    nodes = len(kube_cluster.nodes)
    for job in ("a", "b"):
        kube_cluster.batch.create_namespaced_job(namespace, claim_job(job, nodes, "four"))
    def all_bound(job: str) -> dict[str, str] | None:
        pods = bound_pods(kube_cluster, namespace, job)
        return pods if len(pods) == nodes else None

    bound = {job: system.wait(lambda job=job: all_bound(job), 180, f"Job {job}'s pods bound")
             for job in ("a", "b")}
    per_node: dict[str, list[str]] = {}
    for job in ("a", "b"):
        claims = claims_of(kube_cluster, namespace, job)
        assert set(claims) >= set(bound[job]), (claims.keys(), bound[job])
        for pod_name, node in bound[job].items():
            claim = claims[pod_name]
            status = claim["status"]
            results = status["allocation"]["devices"]["results"]
            assert len(results) == 4, results
            assert {r["pool"] for r in results} == {node}
            assert {r["driver"] for r in results} == {"gpu.nvidia.com"}
            terms = status["allocation"]["nodeSelector"]["nodeSelectorTerms"]
            assert terms[0]["matchFields"][0]["values"] == [node]
            pod = kube_cluster.core.read_namespaced_pod(pod_name, namespace)
            assert [r["uid"] for r in status["reservedFor"]] == [pod.metadata.uid]
            per_node.setdefault(node, []).extend(r["device"] for r in results)
    for node, devices in per_node.items():
        assert len(devices) == len(set(devices)), f"a device given twice on {node}: {devices}"
        assert len(devices) <= 8
    # Sluice counted the claimed devices as GPUs per node.
    jobs = [j for j in system.client.get("/v1/jobs?all=1")["jobs"]
            if j["name"] == f"{namespace}/a"]
    job = system.client.get(f"/v1/jobs/{jobs[-1]['job_sluid']}")["job"]
    assert job["gpus_per_node"] == 4, job


def test_a_claim_no_node_can_satisfy_is_named_on_the_pods(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    start_bridged(system, kube_cluster)
    resource = client.ResourceV1Api(kube_cluster.api)
    resource.create_namespaced_resource_claim_template(namespace, template(
        "a100", 1, "device.attributes['gpu.nvidia.com'].productName == 'A100'"))
    kube_cluster.batch.create_namespaced_job(namespace, claim_job("nope", 1, "a100"))

    said = system.wait(lambda: unscheduled_reason(kube_cluster, namespace), 90,
                       "the pods to say why")
    assert said.startswith("NoMatchingDevices"), said
    assert bound_pods(kube_cluster, namespace, "nope") == {}


def test_selectors_with_kubernetes_quantity_and_semver_functions_choose_devices(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    """The API server compiles these selectors with Kubernetes' CEL library; the bridge
    evaluates them with its own (agents/bridge/cel_library.py) on the published GPUs (80Gi,
    driver 580.65.6): the first admits them, the second none."""
    start_bridged(system, kube_cluster)
    resource = client.ResourceV1Api(kube_cluster.api)
    domain = "device.attributes['gpu.nvidia.com']"
    resource.create_namespaced_resource_claim_template(namespace, template(
        "big", 2, "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
                  f" && {domain}.driverVersion.isGreaterThan(semver('550.0.0'))"))
    resource.create_namespaced_resource_claim_template(namespace, template(
        "huge", 1, "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('100Gi'))"))
    kube_cluster.batch.create_namespaced_job(namespace, claim_job("fits", 1, "big"))
    kube_cluster.batch.create_namespaced_job(namespace, claim_job("nope", 1, "huge"))
    bound = system.wait(lambda: bound_pods(kube_cluster, namespace, "fits") or None, 180,
                        "the pod whose selector admits the GPUs bound")
    (pod_name, node), = bound.items()
    results = claims_of(kube_cluster, namespace, "fits")[pod_name]["status"]["allocation"][
        "devices"]["results"]
    assert len(results) == 2 and {r["pool"] for r in results} == {node}

    said = system.wait(lambda: unscheduled_reason(kube_cluster, namespace, "job-name=nope"),
                       90, "the pod no device fits to say why")
    assert said.startswith("NoMatchingDevices"), said
