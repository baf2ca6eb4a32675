"""A cluster tenant against the bridge, on the real local control plane: what a pod may ask
for, and Sluice jobs that must end when their pods go for good or stay ended when Sluice ended
them (found by a red team; docs/kubernetes.md, "The bridge")."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

from tests.e2e.harness import LocalSystem
from tests.kubernetes.conftest import KubeCluster, mapped_namespace
from tests.kubernetes.harness import LONG, bound_pods, job_manifest, start_bridged
from tests.kubernetes.rbac import account_kubeconfig

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

_LIVE = ("PENDING", "RUNNING", "COMPLETING")


@pytest.fixture
def system(kafka_bootstrap: str, tmp_path: Path, unique: str,
           kube_cluster: KubeCluster) -> Iterator[LocalSystem]:
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"k8t{unique}")
    try:
        yield local
    finally:
        local.stop()


def _jobs(system: LocalSystem, name: str) -> list[dict[str, Any]]:
    return [j for j in system.client.get("/v1/jobs?all=1")["jobs"] if j["name"] == name]


def _ended(system: LocalSystem, name: str) -> dict[str, Any] | None:
    jobs = _jobs(system, name)
    return jobs[-1] if jobs and jobs[-1]["state"] not in _LIVE else None


def _reason(kube: KubeCluster, namespace: str) -> str | None:
    """The reason a pod of the namespace is not scheduled (None while none says one)."""
    for pod in kube.core.list_namespaced_pod(namespace).items:
        for cond in pod.status.conditions or []:
            if cond.type == "PodScheduled" and cond.status == "False" and cond.reason:
                return str(cond.reason)
    return None


def _bound(kube: KubeCluster, namespace: str, job: str, count: int) -> bool:
    return len(bound_pods(kube, namespace, job)) == count


def test_a_pod_cannot_borrow_the_bridges_authority_for_a_negative_nice(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    # The harness's bridge submits as root, an administrator, who may set a negative nice, and
    # the tests' namespaces are root's (conftest: sluice.dev/user root). A pod asking for -10000
    # would jump every job of the cluster: it is refused on the pod, never submitted.
    start_bridged(system, kube_cluster)
    kube_cluster.core.create_namespaced_pod(namespace, {
        "metadata": {"name": "jump", "annotations": {"sluice.dev/nice": "-10000"}},
        "spec": {"schedulerName": "sluice", "restartPolicy": "Never",
                 "containers": [{"name": "main", "image": "train:1",
                                 "resources": {"requests": {"cpu": "1"}}}]}})
    assert system.wait(lambda: _reason(kube_cluster, namespace), 60,
                       "the pod to say why") == "BadAnnotation"
    pod = kube_cluster.core.read_namespaced_pod("jump", namespace)
    assert pod.spec.node_name is None
    assert _jobs(system, f"{namespace}/jump") == []


def test_a_sluice_job_ends_when_its_jobs_pods_go_for_good(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    # Three ways a Job's pods go while the Job stays (for a while): its activeDeadlineSeconds
    # passes, it is suspended, its namespace is deleted (pods go first). No pod comes back,
    # so each Sluice job must end and give its node back.
    start_bridged(system, kube_cluster)
    body = mapped_namespace()
    other = body["metadata"]["name"]
    kube_cluster.core.create_namespace(body)
    system.wait(lambda: kube_cluster.core.list_namespaced_service_account(other).items, 120,
                f"a service account in {other}")
    deadline = job_manifest("deadline", 1, pod_annotations=LONG)
    deadline["spec"]["activeDeadlineSeconds"] = 20
    kube_cluster.batch.create_namespaced_job(namespace, deadline)
    kube_cluster.batch.create_namespaced_job(namespace, job_manifest("pause", 1,
                                                                     pod_annotations=LONG))
    kube_cluster.batch.create_namespaced_job(other, job_manifest("doomed", 1,
                                                                 pod_annotations=LONG))
    for ns, job in ((namespace, "deadline"), (namespace, "pause"), (other, "doomed")):
        system.wait(lambda ns=ns, job=job: _bound(kube_cluster, ns, job, 1), 120,
                    f"{ns}/{job} bound")
    kube_cluster.batch.patch_namespaced_job("pause", namespace, {"spec": {"suspend": True}})
    kube_cluster.core.delete_namespace(other)
    for name in (f"{namespace}/deadline", f"{namespace}/pause", f"{other}/doomed"):
        system.wait(lambda name=name: _ended(system, name), 150, f"the Sluice job of {name} "
                                                                  "ended")
    system.wait_nodes_idle(len(kube_cluster.nodes), timeout_s=60)


def test_a_pods_job_cancelled_in_sluice_is_not_submitted_again(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    # scancel of a running Job's Sluice job deletes its pods; the Job controller makes them
    # again. They must not become a new Sluice job (a cancel or a time limit would then never
    # end a Job): they wait, saying why.
    start_bridged(system, kube_cluster)
    kube_cluster.batch.create_namespaced_job(namespace, job_manifest("stop", 2,
                                                                     pod_annotations=LONG))
    system.wait(lambda: _bound(kube_cluster, namespace, "stop", 2), 120, "the pods bound")
    name = f"{namespace}/stop"
    job = system.wait(lambda: _jobs(system, name), 30, "the Sluice job")[-1]
    system.client.send(job["job_sluid"], "CancelJob", {  # root's scancel
        "job_sluid": job["job_sluid"], "user": "root", "reason": "scancel"})
    assert system.wait(lambda: _reason(kube_cluster, namespace), 150,
                       "the re-made pods to say why") == "SluiceCancelled"
    time.sleep(12)  # a full check period of the waiting gang (agents.bridge.gangs)
    assert [j["state"] for j in _jobs(system, name)] == ["CANCELLED"]
    assert bound_pods(kube_cluster, namespace, "stop") == {}


def _warnings(kube: KubeCluster, namespace: str, pod: str) -> list[str]:
    events = kube.core.list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={pod}").items
    return [e.reason for e in events if e.type == "Warning" and e.source.component == "sluice"]


def _tenant_may_annotate_its_namespace(kube: KubeCluster, namespace: str) -> bool:
    """Whether the namespace's ``tenant`` service account may annotate its own Namespace."""
    loader: Any = kube_config
    api = loader.new_client_from_config(str(account_kubeconfig(kube, "tenant", namespace)))
    try:
        client.CoreV1Api(api).patch_namespace(namespace, {"metadata": {
            "annotations": {"sluice.dev/user": "root"}}})
    except ApiException as exc:
        assert exc.status == 403, exc
        return False
    return True


def test_an_unmapped_namespaces_pods_wait_for_their_administrator_to_name_a_user(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    # They were the (root) bridge's own jobs: any tenant's pods had root's standing in Sluice.
    # Now they are refused NoSluiceUser (condition and Warning Event) and never submitted,
    # until the namespace is annotated; a tenant with the built-in admin role in its namespace
    # may not annotate it (a Role with resources "*" may: docs/kubernetes.md says so).
    core = kube_cluster.core
    core.patch_namespace(namespace, {"metadata": {"annotations": {"sluice.dev/user": None}}})
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "tenant"}})
    rbac = client.RbacAuthorizationV1Api(kube_cluster.api)
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": "tenant-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": namespace}]})
    start_bridged(system, kube_cluster)
    core.create_namespaced_pod(namespace, {
        "metadata": {"name": "nobodys", "annotations": {"sluice.dev/user": "alice", **LONG}},
        "spec": {"schedulerName": "sluice", "restartPolicy": "Never",
                 "containers": [{"name": "main", "image": "train:1",
                                 "resources": {"requests": {"cpu": "1"}}}]}})
    assert system.wait(lambda: _reason(kube_cluster, namespace), 60,
                       "the pod to say why") == "NoSluiceUser"
    assert system.wait(lambda: _warnings(kube_cluster, namespace, "nobodys"), 30,
                       "a Warning Event") == ["NoSluiceUser"]
    assert not _tenant_may_annotate_its_namespace(kube_cluster, namespace)
    time.sleep(12)  # a full check period of the waiting gang (agents.bridge.gangs)
    assert core.read_namespaced_pod("nobodys", namespace).spec.node_name is None
    assert _jobs(system, f"{namespace}/nobodys") == []
    assert _warnings(kube_cluster, namespace, "nobodys") == ["NoSluiceUser"]  # said once
    core.patch_namespace(namespace, {"metadata": {"annotations": {"sluice.dev/user": "bob"}}})
    job = system.wait(lambda: _jobs(system, f"{namespace}/nobodys"), 90,
                      "the job once the namespace names bob")[-1]
    assert job["user"] == "bob"  # the pod's own sluice.dev/user (alice) chose nothing
    system.wait(lambda: core.read_namespaced_pod("nobodys", namespace).spec.node_name, 60,
                "the pod bound")
    # the hazard the docs warn of: a Role granting every resource covers the namespace itself
    rbac.create_namespaced_role(namespace, {
        "metadata": {"name": "everything"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]})
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": "tenant-everything"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "everything"},
        "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": namespace}]})
    assert system.wait(lambda: _tenant_may_annotate_its_namespace(kube_cluster, namespace),
                       30, "the wildcard Role to apply")

