"""A Sluice system with the bridge on the test cluster, and Job helpers."""

from __future__ import annotations

from typing import Any

from tests.e2e.harness import LocalSystem, apply_config
from tests.kubernetes.conftest import KubeCluster
from tests.kubernetes.rbac import role_kubeconfig

__all__ = ["EXPEDITE", "LONG", "bound_pods", "job_manifest", "start_bridge",
           "start_bridged"]

ACC = "network.topology.nvidia.com/accelerator"
# kwok keeps these pods running: its stage waits the jitter when that is below the delay (its
# default jitter is 5 s), so both are set
LONG = {"pod-complete.stage.kwok.x-k8s.io/delay": "20m",
        "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "20m"}
EXPEDITE = "SlurmctldParameters: enable_expedited_requeue\n"


def start_bridged(system: LocalSystem, kube: KubeCluster, config: str = "",
                  node_timeout_s: int = 3) -> None:
    """Worker, projections and the bridge; wait for the kwok nodes and their topology."""
    system.start("worker", "worker", "--loglevel", "info",
                 env={"SLUICE_NODE_TIMEOUT": str(node_timeout_s)})
    system.start("projections", "projections")
    start_bridge(system, kube)
    system.wait_nodes_idle(len(kube.nodes), timeout_s=120)
    system.wait(lambda: system.client.get("/v1/config")["config"].get("topology", {})
                .get("digest"), 60, "the bridge's topology")
    if config:
        apply_config(system, config)


def start_bridge(system: LocalSystem, kube: KubeCluster, *options: str) -> None:
    """The bridge alone (again, after ``system.kill("bridge")``); ``options``: more of
    ``sluice bridge``'s (``--default-user``)."""
    system.start("bridge", "bridge", "--kubeconfig",
                 str(role_kubeconfig(kube, "bridge-rbac.yaml")), "--heartbeat", "0.5",
                 *options)


def job_manifest(name: str, pods: int, annotations: dict[str, str] | None = None,
                 pod_annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """An Indexed Job of ``pods`` pods at once, scheduled by Sluice."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"parallelism": pods, "completions": pods, "completionMode": "Indexed",
                 "backoffLimit": 10, "template": {
                     "metadata": {"annotations": pod_annotations or {}},
                     "spec": {"schedulerName": "sluice", "restartPolicy": "Never",
                              "containers": [{"name": "main", "image": "train:1",
                                              "resources": {
                                                  "requests": {"cpu": "4", "memory": "8Gi"},
                                                  "limits": {"nvidia.com/gpu": "8"}}}]}}}}


def bound_pods(kube: KubeCluster, namespace: str, job: str) -> dict[str, str]:
    """Live pods of a Job that are bound: pod name → node."""
    pods = kube.core.list_namespaced_pod(namespace, label_selector=f"job-name={job}").items
    return {p.metadata.name: p.spec.node_name for p in pods
            if p.spec.node_name and p.metadata.deletion_timestamp is None
            and p.status.phase in ("Pending", "Running")}


def block_of(kube: KubeCluster, node: str) -> str:
    """The node's topology block label."""
    return str(kube.core.read_node(node).metadata.labels[ACC])
