"""The bridge's and the operator's ClusterRoles grant exactly what their code calls.

Each Kubernetes client method the code names (``self.core.delete_namespaced_pod``, a lister
handed to a watch) is resolved through the client's own request builder
(``_<method>_serialize``: its HTTP method and resource path) to the RBAC triple the API server
checks: API group, resource (with its subresource), verb. A lister that is passed on rather
than called is a watch (``Kube._watch`` lists, then watches). The manifests' rules, expanded
to triples, must be the same set: a rule no call needs is a right nobody uses (the roles
granted get/watch/list/update reads the code never made), a call no rule grants fails in a
cluster.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import yaml
from kubernetes import client

from agents.operator.objects import GROUP, PLURAL

_REPO = Path(__file__).resolve().parents[3]
_MANIFESTS = _REPO / "infra" / "kubernetes" / "manifests"
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}
Triple = tuple[str, str, str]
IMPLIED: dict[Triple, set[Triple]] = {
    # The API server checks a second right when a claim's status.allocation or reservedFor
    # change (Kubernetes 1.34+; a 422 "requires resource=resourceclaims/binding, verb=update"
    # without it), which the bridge's allocations do.
    ("resource.k8s.io", "resourceclaims/status", "update"): {
        ("resource.k8s.io", "resourceclaims/binding", "update")},
}


def _api_classes(tree: ast.AST) -> set[str]:
    """The client API classes a module instantiates (``client.CoreV1Api(...)``)."""
    return {node.func.attr for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "client"
            and node.func.attr.endswith("Api")}


def _triple(api: type, method: str) -> Triple:
    source = inspect.getsource(getattr(api, f"_{method}_serialize"))
    http = re.search(r"method='(\w+)'", source)
    path = re.search(r"resource_path='([^']+)'", source)
    assert http and path, method
    parts = path.group(1).strip("/").split("/")
    if parts[0] == "api":  # /api/v1/...: the core group
        group, rest = "", parts[2:]
    else:  # /apis/{group}/{version}/...
        group, rest = parts[1], parts[3:]
    if group == "{group}":  # CustomObjectsApi: the operator's resource only
        group = GROUP
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]  # namespaced: /namespaces/{namespace}/<resource>...
    named = len(rest) > 1
    resource = "/".join([rest[0], *rest[2:]]).replace("{plural}", PLURAL)
    verb = _VERBS.get(http.group(1)) or {
        ("GET", True): "get", ("GET", False): "list",
        ("DELETE", True): "delete", ("DELETE", False): "deletecollection"}[
            (http.group(1), named)]
    return group, resource, verb


def used(folder: str) -> set[Triple]:
    """The RBAC triples the modules of ``agents/<folder>`` need."""
    trees = [ast.parse(path.read_text()) for path in sorted((_REPO / "agents" / folder)
                                                             .glob("*.py"))]
    apis = [getattr(client, name) for tree in trees for name in _api_classes(tree)]
    assert apis, folder
    found: set[Triple] = set()
    for tree in trees:
        called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            owners = [api for api in apis if hasattr(api, f"_{node.attr}_serialize")]
            if not owners:
                continue
            found |= {_triple(api, node.attr) for api in owners}
            if id(node) not in called and node.attr.startswith("list_"):
                # a lister handed to the watch: list, then watch (a create or patch method
                # kept in a table is called later, as it is)
                found |= {(g, r, "watch") for g, r, _ in (_triple(a, node.attr)
                                                          for a in owners)}
    return found.union(*(IMPLIED.get(triple, set()) for triple in found))


def granted(manifest: str) -> set[Triple]:
    """The triples a manifest's ClusterRole grants."""
    (role,) = [doc for doc in yaml.safe_load_all((_MANIFESTS / manifest).read_text())
               if doc and doc["kind"] == "ClusterRole"]
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def test_the_bridge_role_grants_what_the_bridge_calls_and_nothing_else() -> None:
    need = used("bridge")
    assert ("", "pods/binding", "create") in need and ("", "pods", "watch") in need
    assert granted("bridge-rbac.yaml") == need


def test_the_operator_role_grants_what_the_operator_calls_and_nothing_else() -> None:
    need = used("operator")
    assert (GROUP, f"{PLURAL}/status", "patch") in need
    assert granted("operator-rbac.yaml") == need
