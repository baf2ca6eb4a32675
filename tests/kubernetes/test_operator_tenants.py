"""A cluster tenant's SluiceCluster against the operator, on the real local control plane: the
operator reads, drains and resumes only its own Sluice, for its oldest SluiceCluster, and
sends its credential to no API a resource names (found by a red team; docs/kubernetes.md,
"The operator")."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import TEST_USER, job_workdir
from tests.kubernetes.conftest import KubeCluster
from tests.kubernetes.rbac import role_kubeconfig
from tests.kubernetes.test_operator import _crd

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def system(kafka_bootstrap: str, tmp_path: Path, unique: str,
           kube_cluster: KubeCluster) -> Iterator[LocalSystem]:
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"k8o{unique}")
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def fake_views() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server that answers like the views (no job, no node) and notes every request
    with its Authorization header: ``(host:port, notes)``."""
    notes: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            notes.append(f"{self.path} {self.headers.get('Authorization', '')}")
            body = json.dumps({"jobs": [], "nodes": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", notes
    finally:
        server.shutdown()


def _cr(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "sluice.dev/v1alpha1", "kind": "SluiceCluster",
            "metadata": {"name": name}, "spec": {"image": "sluice:1", **spec}}


def _demand_note(custom: Any, namespace: str, name: str) -> str | None:
    """DemandKnown's message once the operator wrote it False (None before)."""
    cr = custom.get_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                             "sluiceclusters", name)
    for cond in (cr.get("status") or {}).get("conditions") or []:
        if cond["type"] == "DemandKnown" and cond["status"] == "False":
            return str(cond["message"])
    return None


def test_a_tenants_sluice_cluster_drains_no_node_and_is_sent_no_credential(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str,
        fake_views: tuple[str, list[str]]) -> None:
    # The operator's own Sluice has nodes prod-gpu-0 and -1 (node daemons), a job on -1.
    system.start_core()
    for ordinal in range(2):
        system.start_node(f"prod-gpu-{ordinal}", 2, 4096)
    system.wait_nodes_idle(2)
    sluid = system.client.sluids.new()
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
        "user": TEST_USER, "command": ["sleep", "120"], "workdir": job_workdir(),
        "nodelist": "prod-gpu-1"}})
    system.wait(lambda: system.client.get(f"/v1/jobs/{sluid}")["job"]["state"] == "RUNNING",
                60, "the job to start")
    _crd(kube_cluster)
    custom = client.CustomObjectsApi(kube_cluster.api)
    own = {"kafkaBootstrap": system.settings.bootstrap, "prefix": system.settings.prefix,
           "api": system.settings.api}
    # The administrator's SluiceCluster of that Sluice, first.
    custom.create_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                           "sluiceclusters", _cr("admin", {**own,
                                                                           "nodeSets": []}))
    # A tenant's, named so that its NodeSet's nodes are prod-gpu-0..1, with no room for them
    # (maxReplicas 0): one that describes the operator's Sluice exactly but is newer, one that
    # names another Kafka and the real views, one that names an API of the tenant's.
    shrink = [{"name": "gpu", "replicas": 2, "minReplicas": 0, "maxReplicas": 0}]
    api, notes = fake_views
    tenants = {"prod": {**own, "nodeSets": shrink},
               "prod-other": {**own, "kafkaBootstrap": "tenant-kafka:9092", "prefix": "prod",
                              "nodeSets": shrink},
               "snoop": {**own, "api": api, "nodeSets": []}}
    system.start("operator", "operator", "--kubeconfig",
                 str(role_kubeconfig(kube_cluster, "operator-rbac.yaml")),
                 "--interval", "1")
    for name, spec in tenants.items():
        custom.create_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                               "sluiceclusters", _cr(name, spec))
    # (prod-other's NodeSet "gpu" with prefix "prod" is named prod-other-gpu: its nodes are
    # not prod-gpu-*, but it reads the real views under the operator's credential all the same)
    notes_by = {name: system.wait(lambda name=name: _demand_note(custom, namespace, name),
                                  60, f"{name}'s DemandKnown") for name in tenants}
    assert "older SluiceCluster" in notes_by["prod"], notes_by
    assert "kafkaBootstrap" in notes_by["prod-other"], notes_by
    assert "spec.api" in notes_by["snoop"], notes_by
    node = system.client.get("/v1/nodes/prod-gpu-1")["node"]
    assert node["service"] != "DRAIN", node
    assert notes == [], "the operator sent a request to a tenant's API"
    assert _demand_note(custom, namespace, "admin") is None  # the administrator's scales


def test_a_sluice_cluster_named_after_anothers_workload_leaves_it_alone(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    # The operator created its objects, or on 409 patched whatever had the name: a
    # SluiceCluster "web" rewrote the namespace's Service "web-projections" (its selector and
    # ports: the Service's own pods no longer behind it), whoever may create SluiceClusters
    # and not Services. (A Deployment's or StatefulSet's patch failed on its immutable
    # selector, by chance.)
    system.start_core()
    _crd(kube_cluster)
    apps = client.AppsV1Api(kube_cluster.api)
    labels = {"app": "web-worker"}
    apps.create_namespaced_deployment(namespace, {
        "metadata": {"name": "web-worker"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "web", "image": "web:1"}]}}}})
    kube_cluster.core.create_namespaced_service(namespace, {
        "metadata": {"name": "web-projections"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}})
    system.start("operator", "operator", "--kubeconfig",
                 str(role_kubeconfig(kube_cluster, "operator-rbac.yaml")),
                 "--interval", "1")
    custom = client.CustomObjectsApi(kube_cluster.api)
    custom.create_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                           "sluiceclusters", _cr("web", {
                                               "kafkaBootstrap": "k:9092", "nodeSets": []}))

    def applied() -> str | None:
        cr = custom.get_namespaced_custom_object("sluice.dev", "v1alpha1", namespace,
                                                 "sluiceclusters", "web")
        for cond in (cr.get("status") or {}).get("conditions") or []:
            if cond["type"] == "Applied" and cond["status"] == "False":
                return str(cond["message"])
        return None

    message = system.wait(applied, 60, "web's Applied condition False")
    service = kube_cluster.core.read_namespaced_service("web-projections", namespace)
    assert service.spec.selector == {"app": "web"}, service.spec.selector
    assert [p.port for p in service.spec.ports] == [80]
    assert "Service web-projections exists and is not this SluiceCluster's" in message, message
    assert "Deployment web-worker exists and is not this SluiceCluster's" in message, message
    deployment = apps.read_namespaced_deployment("web-worker", namespace)
    assert [c.image for c in deployment.spec.template.spec.containers] == ["web:1"]
    assert not deployment.metadata.owner_references
    assert apps.read_namespaced_deployment("web-projections", namespace)  # its own: made
    time.sleep(3)  # passes later leave them alone too
    assert kube_cluster.core.read_namespaced_service(
        "web-projections", namespace).spec.selector == {"app": "web"}
