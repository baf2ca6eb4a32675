"""The operator's pods under Pod Security admission, on the real API server: a SluiceCluster
gets no more than its namespace's Pod Security level allows.

The worker and the projections (and the worker's key-copying init container) pass
``restricted``; the node daemons, root with SETUID, SETGID and KILL to run jobs as their owners,
pass ``baseline`` and are refused under ``restricted``. So whoever may create a SluiceCluster in
a ``restricted`` namespace gets no root-capable pod from the operator: the pods are admitted
in the namespace whoever creates them (here a dry-run create of each pod template).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from agents.operator.objects import cluster_objects
from tests.kubernetes.conftest import KubeCluster

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def levels(kube_cluster: KubeCluster) -> Iterator[dict[str, str]]:
    """One namespace per Pod Security level enforced: level → namespace."""
    made = {}
    core = kube_cluster.core
    try:
        for level in ("restricted", "baseline"):
            name = f"psa-{level}-{uuid.uuid4().hex[:6]}"
            core.create_namespace({"metadata": {"name": name, "labels": {
                "pod-security.kubernetes.io/enforce": level,
                "pod-security.kubernetes.io/enforce-version": "latest"}}})
            made[level] = name
        deadline = time.monotonic() + 120  # a pod needs its service account
        while not all(core.list_namespaced_service_account(n).items for n in made.values()):
            assert time.monotonic() < deadline, "no service accounts"
            time.sleep(0.2)
        yield made
    finally:
        for name in made.values():
            core.delete_namespace(name)


def _pods(namespace: str) -> dict[str, dict[str, Any]]:
    cr = {"metadata": {"name": "demo", "namespace": namespace, "uid": "u"},
          "spec": {"kafkaBootstrap": "kafka:9092", "keysSecret": "demo-keys",
                   "authSecret": "demo-auth",
                   "nodeSets": [{"name": "gpu", "cpus": 2, "gpus": 1}]}}
    return {obj["metadata"]["name"]: {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": obj["metadata"]["name"], "namespace": namespace},
                "spec": obj["spec"]["template"]["spec"]}
            for obj in cluster_objects(cr, {}) if obj["kind"] != "Service"}


def _admitted(kube: KubeCluster, pod: dict[str, Any]) -> str:
    """"" when the API server admits the pod (dry run), else its refusal."""
    try:
        kube.core.create_namespaced_pod(pod["metadata"]["namespace"], pod, dry_run="All")
    except ApiException as exc:
        assert exc.status == 403, exc.body
        return str(exc.body)
    return ""


def test_only_a_baseline_namespace_admits_the_root_node_daemons(
        kube_cluster: KubeCluster, levels: dict[str, str]) -> None:
    restricted = _pods(levels["restricted"])
    assert sorted(restricted) == ["demo-gpu", "demo-projections", "demo-worker"]
    for name in ("demo-worker", "demo-projections"):  # the worker with its init container
        assert _admitted(kube_cluster, restricted[name]) == "", name
    refusal = _admitted(kube_cluster, restricted["demo-gpu"])
    assert "violates PodSecurity \\\"restricted:latest\\\"" in refusal, refusal
    assert "runAsNonRoot" in refusal and "SETUID" in refusal, refusal
    baseline = _pods(levels["baseline"])
    for name, pod in baseline.items():
        assert _admitted(kube_cluster, pod) == "", name
