"""Run the bridge and the operator with exactly the rights of their manifests.

``role_kubeconfig`` applies a manifest of ``infra/kubernetes/manifests`` (its ServiceAccount,
ClusterRole and ClusterRoleBinding) to the test cluster and writes a kubeconfig holding a token
of that service account (TokenRequest): a process started with it may do what the ClusterRole
grants and nothing more, so a call the trimmed role lacks fails the test that makes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.kubernetes.conftest import KubeCluster

__all__ = ["account_kubeconfig", "role_kubeconfig"]

_MANIFESTS = Path(__file__).resolve().parents[2] / "infra" / "kubernetes" / "manifests"


def _apply(create: Any, replace: Any, body: dict[str, Any], *namespace: str) -> None:
    try:
        create(*namespace, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
        replace(body["metadata"]["name"], *namespace, body)


def role_kubeconfig(kube: KubeCluster, manifest: str) -> Path:
    """A kubeconfig of the manifest's service account (its objects applied first)."""
    core, rbac = kube.core, client.RbacAuthorizationV1Api(kube.api)
    account: dict[str, Any] = {}
    for doc in yaml.safe_load_all((_MANIFESTS / manifest).read_text()):
        kind = (doc or {}).get("kind")
        if kind == "ServiceAccount":
            account = doc
            namespace = doc["metadata"]["namespace"]
            try:
                core.create_namespace({"metadata": {"name": namespace}})
            except ApiException as exc:
                if exc.status != 409:
                    raise
            try:
                core.create_namespaced_service_account(namespace, doc)
            except ApiException as exc:
                if exc.status != 409:
                    raise
        elif kind == "ClusterRole":
            _apply(rbac.create_cluster_role, rbac.replace_cluster_role, doc)
        elif kind == "ClusterRoleBinding":
            _apply(rbac.create_cluster_role_binding, rbac.replace_cluster_role_binding, doc)
    return account_kubeconfig(kube, account["metadata"]["name"],
                              account["metadata"]["namespace"])


def account_kubeconfig(kube: KubeCluster, name: str, namespace: str) -> Path:
    """A kubeconfig holding a token of an existing service account (TokenRequest)."""
    core = kube.core
    token = core.create_namespaced_service_account_token(
        name, namespace, {"spec": {"expirationSeconds": 86400}}).status.token
    admin = yaml.safe_load(kube.kubeconfig.read_text())
    (cluster,) = admin["clusters"]
    config = {"apiVersion": "v1", "kind": "Config", "current-context": name,
              "clusters": [cluster], "users": [{"name": name, "user": {"token": token}}],
              "contexts": [{"name": name, "context": {"cluster": cluster["name"],
                                                      "user": name}}]}
    path = kube.kubeconfig.parent / f"{namespace}.{name}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path
