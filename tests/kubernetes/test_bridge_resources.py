"""What a pod requests, honoured or refused, on the real local control plane: GPUs
(``nvidia.com/gpu``) are Sluice GPUs, counted per node; a pod asking for more than any node
has, or for a resource Sluice does not count (another extended resource, hugepages), is
refused with a reason on the pod and a Warning Event (``kubectl describe pod``), never bound
where the kubelet would turn it away (docs/kubernetes.md, "Resources")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import LocalSystem
from tests.kubernetes.conftest import KubeCluster
from tests.kubernetes.harness import LONG, bound_pods, job_manifest, start_bridged

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def system(kafka_bootstrap: str, tmp_path: Path, unique: str,
           kube_cluster: KubeCluster) -> Iterator[LocalSystem]:
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"k8r{unique}")
    try:
        yield local
    finally:
        local.stop()


def _job(name: str, pods: int, requests: dict[str, str]) -> dict[str, Any]:
    manifest = job_manifest(name, pods, pod_annotations=LONG)
    (container,) = manifest["spec"]["template"]["spec"]["containers"]
    container["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": requests}
    return manifest


def _said(kube: KubeCluster, namespace: str, job: str) -> tuple[str, str] | None:
    """(reason, message) a pod of the Job says it waits for (None while none says)."""
    pods = kube.core.list_namespaced_pod(namespace, label_selector=f"job-name={job}").items
    for pod in pods:
        for cond in pod.status.conditions or []:
            if cond.type == "PodScheduled" and cond.status == "False" and cond.reason:
                return str(cond.reason), str(cond.message)
    return None


def _events(kube: KubeCluster, namespace: str) -> dict[str, str]:
    """Warning events of the bridge's about pods: reason → message."""
    return {e.reason: e.message for e in kube.core.list_namespaced_event(namespace).items
            if e.type == "Warning" and e.involved_object.kind == "Pod"
            and (e.source.component if e.source else "") == "sluice"}


def test_gpus_are_counted_per_node_and_what_no_node_has_is_refused(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    start_bridged(system, kube_cluster)
    nodes = len(kube_cluster.nodes)  # 8 GPUs each
    # Six GPUs on every node: a pod of four more GPUs waits, though every node has CPUs free.
    kube_cluster.batch.create_namespaced_job(namespace, _job("six", nodes,
                                                             {"nvidia.com/gpu": "6"}))
    system.wait(lambda: len(bound_pods(kube_cluster, namespace, "six")) == nodes, 120,
                "six GPUs bound on every node")
    kube_cluster.batch.create_namespaced_job(namespace, _job("four", 1, {"nvidia.com/gpu": "4"}))
    kube_cluster.batch.create_namespaced_job(namespace, _job("two", 1, {"nvidia.com/gpu": "2"}))
    system.wait(lambda: len(bound_pods(kube_cluster, namespace, "two")) == 1, 120,
                "a pod of two GPUs bound")
    reason = system.wait(lambda: _said(kube_cluster, namespace, "four"), 60,
                         "the four-GPU pod to say why it waits")
    assert reason[0] == "SluicePending", reason
    assert bound_pods(kube_cluster, namespace, "four") == {}

    # More GPUs than any node has, and resources Sluice does not count: refused, never bound.
    kube_cluster.batch.create_namespaced_job(namespace, _job("huge", 1,
                                                             {"nvidia.com/gpu": "16"}))
    kube_cluster.batch.create_namespaced_job(namespace, _job("fpga", 1, {"example.com/fpga": "1"}))
    kube_cluster.batch.create_namespaced_job(namespace, _job("pages", 1,
                                                             {"hugepages-2Mi": "64Mi"}))
    huge = system.wait(lambda: _said(kube_cluster, namespace, "huge"), 60, "huge to say why")
    fpga = system.wait(lambda: _said(kube_cluster, namespace, "fpga"), 60, "fpga to say why")
    pages = system.wait(lambda: _said(kube_cluster, namespace, "pages"), 60, "pages: why")
    assert huge[0] == "SluiceRejected" and "16" in huge[1], huge
    assert fpga[0] == "UnsupportedResource" and "example.com/fpga" in fpga[1], fpga
    assert pages[0] == "UnsupportedResource" and "hugepages-2Mi" in pages[1], pages
    for job in ("huge", "fpga", "pages"):
        assert bound_pods(kube_cluster, namespace, job) == {}, job
    def warned() -> dict[str, str] | None:
        found = _events(kube_cluster, namespace)
        return found if {"UnsupportedResource", "SluiceRejected"} <= set(found) else None

    events = system.wait(warned, 60, "the bridge's Warning events")
    assert "example.com/fpga" in events["UnsupportedResource"] \
        or "hugepages-2Mi" in events["UnsupportedResource"], events


def test_a_pod_goes_only_to_nodes_its_selector_and_tolerations_allow(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    # Seven of the eight nodes are tainted for another team (NoSchedule). The bridge ignored
    # taints, selectors and affinity: any tenant's pod was bound to the dedicated nodes.
    tainted, free = kube_cluster.nodes[:-1], kube_cluster.nodes[-1]
    taint = {"key": "dedicated", "value": "team-b", "effect": "NoSchedule"}
    for node in tainted:
        kube_cluster.core.patch_node(node, {"spec": {"taints": [taint]}})
    try:
        start_bridged(system, kube_cluster)
        whole = {"nvidia.com/gpu": "8"}  # a node each
        kube_cluster.batch.create_namespaced_job(namespace, _job("first", 1, whole))
        system.wait(lambda: bound_pods(kube_cluster, namespace, "first"), 120, "first bound")
        assert list(bound_pods(kube_cluster, namespace, "first").values()) == [free]
        kube_cluster.batch.create_namespaced_job(namespace, _job("second", 1, whole))
        tolerant = _job("tolerant", 1, whole)
        tolerant["spec"]["template"]["spec"]["tolerations"] = [
            {"key": "dedicated", "operator": "Equal", "value": "team-b",
             "effect": "NoSchedule"}]
        kube_cluster.batch.create_namespaced_job(namespace, tolerant)
        nowhere = _job("nowhere", 1, {"nvidia.com/gpu": "1"})
        nowhere["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "none"}
        kube_cluster.batch.create_namespaced_job(namespace, nowhere)
        system.wait(lambda: bound_pods(kube_cluster, namespace, "tolerant"), 120,
                    "the tolerant pod bound")
        assert set(bound_pods(kube_cluster, namespace, "tolerant").values()) <= set(tainted)
        said = system.wait(lambda: _said(kube_cluster, namespace, "nowhere"), 60,
                           "nowhere to say why")
        assert said[0] == "NoNodeAllowed", said
        reason = system.wait(lambda: _said(kube_cluster, namespace, "second"), 60,
                             "second to say why it waits")
        assert reason[0] == "SluicePending", reason  # seven idle nodes, none its own
        assert bound_pods(kube_cluster, namespace, "second") == {}
    finally:
        for node in tainted:
            kube_cluster.core.patch_node(node, {"spec": {"taints": None}})
