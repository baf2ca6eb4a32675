"""The operator's loop: every SluiceCluster reconciled, level-triggered, every interval.

For each resource: scale its NodeSets from the demand its projections expose (when
``spec.api`` names them), drain the nodes a scale-down removes and lower the replicas only
once they hold no job, apply the objects of :mod:`agents.operator.objects` (create, else
patch), and write ``status``: conditions ``Applied``, ``DemandKnown`` and ``Scaled``, and each
NodeSet's replicas. Deleting the resource removes its objects (owner references: the garbage
collector). A worker image upgrade is a Deployment rollout with the ``Recreate`` strategy:
the old worker stops (its Kafka transaction fenced) before the new one owns the shards, and
the ledger is the state, so no job is lost.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from agents.bridge.kube import Kube
from agents.operator.objects import GROUP, PLURAL, cluster_objects, nodeset_name
from agents.operator.scaler import desired_replicas
from cli.client import ApiError, Client
from cli.submit import real_user
from streams.settings import Settings

__all__ = ["Operator"]

log = logging.getLogger(__name__)
_VERSION = "v1alpha1"
DRAIN_REASON = "sluice operator: scale down"
"""The reason of the operator's drains: a node drained so is resumed when its set grows again."""


class NotOursError(Exception):
    """An object of the name the operator would make belongs to someone else."""


class Operator:
    """Reconciles SluiceCluster resources until stopped."""

    def __init__(self, settings: Settings, kube: Kube, namespace: str = "",
                 interval_s: float = 10.0) -> None:
        self.settings, self.kube, self.namespace = settings, kube, namespace
        self.interval_s = interval_s
        self.custom = client.CustomObjectsApi(kube.api_client)
        self.apps = client.AppsV1Api(kube.api_client)
        self.core = client.CoreV1Api(kube.api_client)
        self._stopping = False
        self._draining: set[str] = set()

    def stop(self) -> None:
        """Ask the loop to end."""
        self._stopping = True

    def run(self) -> None:
        """Reconcile every resource each interval."""
        while not self._stopping:
            try:
                self.reconcile_all()
            except ApiException as exc:
                log.warning("reconcile: %s %s", exc.status, exc.reason)
            except (HTTPError, OSError) as exc:  # the API server out of reach (a restart)
                log.warning("reconcile: the API server does not answer: %s", exc)
            deadline = time.monotonic() + self.interval_s
            while not self._stopping and time.monotonic() < deadline:
                time.sleep(0.2)

    def reconcile_all(self) -> None:
        """One pass over every SluiceCluster."""
        found: Any
        if self.namespace:
            found = self.custom.list_namespaced_custom_object(GROUP, _VERSION, self.namespace,
                                                              PLURAL)
        else:
            found = self.custom.list_cluster_custom_object(GROUP, _VERSION, PLURAL)
        items = found.get("items", [])
        own = [cr for cr in items if not foreign(cr, self.settings)]
        scaler = min(own, key=_age, default=None)
        for cr in items:
            self.reconcile(cr, scales=cr is scaler)

    # -- one resource ---------------------------------------------------------------------

    def reconcile(self, cr: dict[str, Any], scales: bool = True) -> None:
        """Scale (``scales``: the resource is the one that describes the operator's own
        Sluice, :func:`foreign`), apply, report status for one SluiceCluster."""
        conditions: list[dict[str, str]] = []
        try:
            replicas, demand_note = self._scale(cr) if scales else ({}, _not_scaled(
                cr, self.settings))
        except ApiError as exc:  # a drain or resume Sluice's Kafka did not take: next pass
            log.warning("%s: %s", cr["metadata"]["name"], exc)
            replicas, demand_note = {}, f"a request to Sluice was not sent: {exc}"
        conditions.append(_condition("DemandKnown", demand_note == "", demand_note or
                                     "pending demand read from the projections"))
        problems = []
        for obj in cluster_objects(cr, replicas):
            try:
                self._apply(obj)
            except ApiException as exc:
                problems.append(f"{obj['kind']} {obj['metadata']['name']}: {exc.reason}")
            except NotOursError as exc:
                problems.append(str(exc))
        conditions.append(_condition("Applied", not problems,
                                     "; ".join(problems) or "worker, projections, node sets"))
        wanted = {n["name"]: replicas.get(n["name"], int(n.get("replicas", 0)))
                  for n in cr.get("spec", {}).get("nodeSets") or []}
        conditions.append(_condition("Scaled", not self._draining,
                                     f"draining {sorted(self._draining)}" if self._draining
                                     else "node sets at their replicas"))
        status = {"conditions": conditions, "nodeSets": wanted,
                  "observedGeneration": cr["metadata"].get("generation", 0)}
        meta = cr["metadata"]
        try:
            self.custom.patch_namespaced_custom_object_status(
                GROUP, _VERSION, meta["namespace"], PLURAL, meta["name"], {"status": status})
        except ApiException as exc:
            log.warning("status of %s: %s", meta["name"], exc.reason)

    def _scale(self, cr: dict[str, Any]) -> tuple[dict[str, int], str]:
        """Replicas by NodeSet name, and why demand is unknown ("" when it is known)."""
        spec = cr.get("spec", {})
        if not spec.get("api"):
            return {}, "spec.api is not set: node sets keep their replicas"
        sluice = Client(self.settings)  # its own API: spec.api equals it (foreign)
        try:
            pending = sluice.get("/v1/jobs?state=PENDING")["jobs"]
            nodes = {n["name"]: n for n in sluice.get("/v1/nodes")["nodes"]}
        except ApiError as exc:
            return {}, f"the projections at {spec['api']} do not answer: {exc}"
        replicas = {}
        for nodeset in spec.get("nodeSets") or []:
            name = nodeset_name(cr, nodeset)
            current = self._current(cr["metadata"]["namespace"], name, nodeset)
            mine = [n for n in nodes.values() if n["name"].startswith(f"{name}-")]
            busy = sum(1 for n in mine if n.get("jobs"))
            wanted = desired_replicas(nodeset, current, pending, busy)
            replicas[nodeset["name"]] = self._down_to(sluice, name, current, wanted, nodes)
        return replicas, ""

    def _down_to(self, sluice: Client, name: str, current: int, wanted: int,
                 nodes: dict[str, dict[str, Any]]) -> int:
        """A scale-down drains the highest ordinals first; replicas drop once they are empty.
        A scale-up resumes the nodes of the set a scale-down drained (and no other drain)."""
        if wanted >= current:
            self._draining -= {f"{name}-{i}" for i in range(current + 1)}
            for ordinal in range(wanted):
                row = nodes.get(f"{name}-{ordinal}")
                if row is not None and row.get("service") == "DRAIN" \
                        and row.get("reason") == DRAIN_REASON:
                    sluice.send(row["name"], "ResumeNode", {"name": row["name"],
                                                            "user": real_user()})
            return wanted
        keep = current
        for ordinal in range(current - 1, wanted - 1, -1):
            node = f"{name}-{ordinal}"
            row = nodes.get(node)
            if row is not None and row.get("jobs"):
                if node not in self._draining:
                    sluice.send(node, "DrainNode", {"name": node, "down": False,
                                                    "user": real_user(),
                                                    "reason": DRAIN_REASON})
                    self._draining.add(node)
                break
            self._draining.discard(node)
            keep = ordinal
        return keep

    def _current(self, namespace: str, name: str, nodeset: dict[str, Any]) -> int:
        try:
            sts = self.apps.read_namespaced_stateful_set(name, namespace)
            return int(sts.spec.replicas or 0)
        except ApiException:
            return int(nodeset.get("replicas", 0))

    def _apply(self, obj: dict[str, Any]) -> None:
        """Create the object, or patch it to what it should be."""
        kind, meta = obj["kind"], obj["metadata"]
        # the client's methods named in full: tests/unit/bridge/test_rbac_rules.py compares
        # the calls made here with the ClusterRole (operator-rbac.yaml)
        methods: dict[str, tuple[Any, Any, Any]] = {
            "Deployment": (self.apps.create_namespaced_deployment,
                           self.apps.read_namespaced_deployment,
                           self.apps.patch_namespaced_deployment),
            "StatefulSet": (self.apps.create_namespaced_stateful_set,
                            self.apps.read_namespaced_stateful_set,
                            self.apps.patch_namespaced_stateful_set),
            "Service": (self.core.create_namespaced_service, self.core.read_namespaced_service,
                        self.core.patch_namespaced_service)}
        create, read, patch = methods[kind]
        try:
            create(meta["namespace"], obj)
        except ApiException as exc:
            if exc.status != 409:
                raise
            owner = meta["ownerReferences"][0]["uid"]
            found = read(meta["name"], meta["namespace"]).metadata.owner_references or []
            if not any(ref.uid == owner and ref.controller for ref in found):
                # Another's object of that name (a SluiceCluster named so that its objects'
                # names are another workload's): patched, it ran the resource's image in
                # that workload's place (red team).
                raise NotOursError(f"{kind} {meta['name']} exists and is not this "
                              "SluiceCluster's: left alone") from None
            patch(meta["name"], meta["namespace"], obj)


def foreign(cr: dict[str, Any], settings: Settings) -> str:
    """Why a SluiceCluster is not the operator's own Sluice ("" when it is): its
    ``kafkaBootstrap``, topic prefix (``prefix``, default its name) and ``api`` (when set) must
    be the operator's own (``KAFKA_BOOTSTRAP``, ``SLUICE_TOPIC_PREFIX``, ``SLUICE_API``).

    The operator reads demand and drains and resumes nodes with its own credential, in its own
    Sluice, by node name: a resource of any namespace that named another API had that API
    sent the operator's credential (a JWT is a bearer token: root's, for five minutes), and
    one named after another's nodes drained them (red team)."""
    spec, name = cr.get("spec") or {}, cr.get("metadata", {}).get("name", "")
    if spec.get("kafkaBootstrap") != settings.bootstrap:
        return (f"spec.kafkaBootstrap {spec.get('kafkaBootstrap')!r} is not the operator's "
                f"({settings.bootstrap})")
    if (spec.get("prefix") or name) != settings.prefix:
        return (f"the topic prefix {spec.get('prefix') or name!r} is not the operator's "
                f"({settings.prefix})")
    if spec.get("api") and spec["api"] != settings.api:
        return f"spec.api {spec['api']!r} is not the operator's SLUICE_API ({settings.api})"
    return ""


def _age(cr: dict[str, Any]) -> tuple[str, str, str]:
    """The oldest SluiceCluster first (creation time, then namespace and name)."""
    meta = cr.get("metadata", {})
    return (str(meta.get("creationTimestamp", "")), str(meta.get("namespace", "")),
            str(meta.get("name", "")))


def _not_scaled(cr: dict[str, Any], settings: Settings) -> str:
    why = foreign(cr, settings)
    if why:
        return (f"{why}: the operator reads, drains and resumes only its own Sluice; the "
                "node sets keep their replicas")
    return ("an older SluiceCluster describes the operator's Sluice and scales it; this one's "
            "node sets keep their replicas")


def _condition(kind: str, ok: bool, message: str) -> dict[str, str]:
    return {"type": kind, "status": "True" if ok else "False",
            "reason": kind if ok else f"Not{kind}", "message": message[:500],
            "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
