"""The Kubernetes side of the bridge: watches, bindings, deletions, pod conditions.

Pods and Nodes (and, where the API serves resource.k8s.io/v1, ResourceSlices and
ResourceClaims) are **watched**: one list at start (and again only when the API server says
the watch's resourceVersion is too old, HTTP 410), then a watch from its resourceVersion; every
event lands on a queue as ``(kind, type, object as a dict)``. Nothing lists per cycle.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes import config as _config
from kubernetes import watch as _watch
from kubernetes.client.exceptions import ApiException

from agents.bridge.gang import USER_KEY, GangError
from agents.bridge.slim import kept_annotations, slim_pod

__all__ = ["SCHEDULER_NAME", "Kube"]

log = logging.getLogger(__name__)

SCHEDULER_NAME = "sluice"
NAMESPACE_TTL_S = 30.0
"""How long a namespace's user is remembered (a changed annotation applies within this)."""
Event = tuple[str, str, dict[str, Any]]


class Kube:
    """One API client; ``start_watches`` feeds ``events``."""

    def __init__(self, kubeconfig: Path | None, scheduler_name: str = SCHEDULER_NAME) -> None:
        loader: Any = _config  # the client's loaders carry no annotations
        if kubeconfig is not None:
            self.api_client = loader.new_client_from_config(str(kubeconfig))
        else:
            try:
                loader.load_incluster_config()
            except loader.ConfigException:
                loader.load_kube_config()
            self.api_client = client.ApiClient()
        self.core = client.CoreV1Api(self.api_client)
        self.batch = client.BatchV1Api(self.api_client)
        self.resource = client.ResourceV1Api(self.api_client)
        self.dra = False
        """True once the API server answered for resource.k8s.io/v1 (DRA)."""
        self.scheduler_name = scheduler_name
        self.events: queue.Queue[Event] = queue.Queue()
        self._stop = threading.Event()
        self._namespace_users: dict[str, tuple[str, float]] = {}

    def as_dict(self, obj: Any) -> dict[str, Any]:
        """A client object as the API's JSON (camelCase keys)."""
        return dict(self.api_client.sanitize_for_serialization(obj))

    # -- watches --------------------------------------------------------------------------

    def start_watches(self) -> None:
        """Start the pod and node watch threads (daemon threads)."""
        selector = f"spec.schedulerName={self.scheduler_name}"
        threading.Thread(target=self._watch, name="watch-pods", daemon=True, args=(
            "Pod", self.core.list_pod_for_all_namespaces, {"field_selector": selector})).start()
        threading.Thread(target=self._watch, name="watch-nodes", daemon=True,
                         args=("Node", self.core.list_node, {})).start()
        self.dra = self._serves_dra()
        if self.dra:
            threading.Thread(target=self._watch, name="watch-slices", daemon=True, args=(
                "ResourceSlice", self.resource.list_resource_slice, {})).start()
            threading.Thread(target=self._watch, name="watch-claims", daemon=True, args=(
                "ResourceClaim", self.resource.list_resource_claim_for_all_namespaces,
                {}, "ResourceV1ResourceClaim")).start()

    def _serves_dra(self, patience_s: float = 30.0) -> bool:
        """True when the API server serves resource.k8s.io/v1 to us (an answer that is not a
        list, 404 or 403, means no DRA; no answer at all is retried for ``patience_s``)."""
        deadline = time.monotonic() + patience_s
        while True:
            try:
                self.resource.list_resource_slice(limit=1)
                return True
            except ApiException as exc:
                log.info("no DRA (resource.k8s.io/v1 answered %s %s): GPUs as nvidia.com/gpu "
                         "only", exc.status, exc.reason)
                return False
            except Exception as exc:  # no answer yet: the API server may be starting
                if time.monotonic() > deadline:
                    raise
                log.warning("the API server does not answer (%s); retrying", exc)
                time.sleep(1.0)

    def stop(self) -> None:
        """Ask the watch threads to end."""
        self._stop.set()

    def _watch(self, kind: str, lister: Callable[..., Any], kwargs: dict[str, Any],
               model: str | None = None) -> None:
        """List, then watch from the list's resourceVersion; ``model``: the client's class of
        one item where the watch cannot guess it from the lister (``ResourceV1ResourceClaim``:
        the list is ``V1ResourceClaimList``, the item class is not ``V1ResourceClaim``)."""
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    listed = lister(**kwargs)
                    uids = []
                    for item in listed.items:
                        obj = self._kept(kind, self.as_dict(item))
                        uids.append(obj.get("metadata", {}).get("uid", ""))
                        self.events.put((kind, "ADDED", obj))
                    version = listed.metadata.resource_version
                    # what a list does not name is gone, deleted while nobody watched
                    self.events.put((kind, "SYNCED", {"uids": uids}))
                module: Any = _watch  # the client's watch carries no annotations
                watcher = module.Watch(return_type=model)
                stream = watcher.stream(lister, resource_version=version,
                                              timeout_seconds=60, allow_watch_bookmarks=True,
                                              **kwargs)
                for event in stream:
                    if self._stop.is_set():
                        return
                    obj = self._kept(kind, self.as_dict(event["object"]))
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if event["type"] != "BOOKMARK":
                        self.events.put((kind, event["type"], obj))
            except ApiException as exc:
                if exc.status == 410:  # too old: list once more, then watch again
                    version = ""
                    continue
                log.warning("watch of %ss: %s; retrying", kind, exc.reason)
                time.sleep(1.0)
            except Exception as exc:  # a dropped connection: the watch resumes from version
                log.warning("watch of %ss interrupted: %s; resuming", kind, exc)
                time.sleep(1.0)

    @staticmethod
    def _kept(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """What the bridge keeps of a watched object: a pod slimmed (``slim_pod``)."""
        return slim_pod(obj) if kind == "Pod" else obj

    # -- actions --------------------------------------------------------------------------

    def namespace_user(self, namespace: str) -> str:
        """The Sluice user a namespace's pods are submitted for: its ``sluice.dev/user``
        annotation ("" when it has none, or is gone), read at most every ``NAMESPACE_TTL_S``.
        Only the Namespace is asked, never the pod or its Job: whoever may create pods in a
        namespace must not choose whose jobs they become."""
        now = time.monotonic()
        cached = self._namespace_users.get(namespace)
        if cached is not None and now - cached[1] < NAMESPACE_TTL_S:
            return cached[0]
        try:
            meta = self.core.read_namespace(namespace).metadata
        except ApiException as exc:
            if exc.status == 403:  # never guess an owner: the pods say why they wait
                raise GangError("NamespaceUnreadable", f"the bridge may not read namespace "
                                f"{namespace} ({exc.reason}): its RBAC needs namespaces get "
                                "(infra/kubernetes/manifests/bridge-rbac.yaml)") from exc
            if exc.status != 404:
                raise
            user = ""
        else:
            annotations = (meta.annotations if meta is not None else None) or {}
            user = str(annotations.get(USER_KEY, ""))
        self._namespace_users[namespace] = (user, now)
        return user

    def namespace_ending(self, namespace: str) -> bool:
        """True when a namespace is gone or being deleted (read now, not from the users'
        cache: its pods' deletion is what asks). A namespace the bridge may not read is
        taken as living."""
        try:
            ns = self.core.read_namespace(namespace)
        except ApiException as exc:
            if exc.status == 404:
                return True
            if exc.status == 403:
                return False
            raise
        meta: Any = ns.metadata
        return bool(meta is not None and meta.deletion_timestamp) or (
            ns.status is not None and ns.status.phase == "Terminating")

    def job(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Job (None when it is gone), with only the annotations the bridge reads."""
        try:
            job = self.as_dict(self.batch.read_namespaced_job(name, namespace))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        meta = job.get("metadata") or {}
        job["metadata"] = {**meta, "annotations": kept_annotations(meta), "managedFields": []}
        return job

    def device_classes(self) -> dict[str, tuple[str, ...]]:
        """DeviceClass name → the CEL expressions of its selectors (none without DRA)."""
        if not self.dra:
            return {}
        classes = {}
        for item in self.resource.list_device_class().items:
            obj = self.as_dict(item)
            classes[obj["metadata"]["name"]] = tuple(
                str((s.get("cel") or {}).get("expression", ""))
                for s in (obj.get("spec") or {}).get("selectors") or [])
        return classes

    def claim_template(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A ResourceClaimTemplate (None when it is missing)."""
        try:
            return self.as_dict(self.resource.read_namespaced_resource_claim_template(
                name, namespace))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def update_claim_status(self, claim: dict[str, Any]) -> dict[str, Any] | None:
        """Write a claim's status (its resourceVersion guards it); None on a conflict."""
        meta = claim["metadata"]
        body: Any = claim  # the API's JSON: the client sends a dict as it is
        try:
            answer = self.resource.replace_namespaced_resource_claim_status(
                meta["name"], meta["namespace"], body)
        except ApiException as exc:
            if exc.status in (404, 409):
                log.info("claim %s/%s not updated: %s", meta["namespace"], meta["name"],
                         exc.reason)
                return None
            raise
        return self.as_dict(answer)

    def bind(self, namespace: str, name: str, uid: str, node: str) -> bool:
        """Bind a pod to a node (the Binding subresource); False when the pod is gone or bound."""
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=name, namespace=namespace, uid=uid),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node))
        try:  # _preload_content=False: the client cannot read a Binding answer back
            answer: Any = self.core.create_namespaced_pod_binding(
                name, namespace, body, _preload_content=False)  # a raw urllib3 response
            answer.read()  # all of it, so the connection goes back to the pool (no new TLS
            answer.release_conn()  # handshake per binding)
        except ApiException as exc:
            if exc.status in (404, 409):
                log.info("pod %s/%s not bound to %s: %s", namespace, name, node, exc.reason)
                return False
            raise
        return True

    def delete_pod(self, namespace: str, name: str, uid: str, now: bool) -> None:
        """Delete a pod (at once when its node is not ready: no kubelet would confirm)."""
        options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid),
                                          grace_period_seconds=0 if now else None)
        try:
            self.core.delete_namespaced_pod(name, namespace, body=options)
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise

    def unschedulable(self, namespace: str, name: str, reason: str, message: str,
                      uid: str = "") -> None:
        """Say on the pod why it is not bound (PodScheduled=False, as kube-scheduler does), and
        in a Warning Event (``kubectl describe pod`` lists Events, not a condition's message).
        The gangs say each reason once per pod (``GangTable._say``), so events do not pile."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        condition = {"type": "PodScheduled", "status": "False", "reason": reason,
                     "message": message[:1000], "lastTransitionTime": now}
        try:
            self.core.patch_namespaced_pod_status(name, namespace,
                                                  {"status": {"conditions": [condition]}})
        except ApiException as exc:
            if exc.status != 404:
                log.warning("cannot mark pod %s/%s: %s", namespace, name, exc.reason)
            return
        event: Any = {"metadata": {"generateName": f"{name}.", "namespace": namespace},
                      "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace,
                                         "name": name, "uid": uid},
                      "reason": reason, "message": message[:1000], "type": "Warning",
                      "source": {"component": self.scheduler_name},
                      "reportingComponent": self.scheduler_name, "reportingInstance": "bridge",
                      "firstTimestamp": now, "lastTimestamp": now, "count": 1}
        try:
            self.core.create_namespaced_event(namespace, event)
        except ApiException as exc:
            log.warning("no event for pod %s/%s: %s", namespace, name, exc.reason)
