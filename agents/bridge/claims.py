"""The bridge's DRA book: published devices, claims, and the allocation of a pod's claims.

Fed by the ResourceSlice and ResourceClaim watches (``agents.bridge.kube``); the choice of
devices is :mod:`agents.bridge.devices` (pure). A device counts as a GPU when its driver is one
of ``gpu_drivers`` (default the NVIDIA and AMD DRA drivers) and it is not typed otherwise
(NVIDIA's driver types whole GPUs ``gpu``, MIG slices ``mig``); a node's GPUs are the more of its
``nvidia.com/gpu`` allocatable and its GPU devices, and a claim's request counts toward the
job's GPUs per node when its DeviceClass admits a GPU device.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agents.bridge.devices import (
    ClaimError,
    Device,
    DeviceRequest,
    allocation_status,
    choose,
    claim_requests,
    devices_of_slice,
    taken_by,
)

if TYPE_CHECKING:
    from agents.bridge.kube import Kube

__all__ = ["GPU_DRIVERS", "ClaimBook"]

log = logging.getLogger(__name__)

GPU_DRIVERS = ("gpu.nvidia.com", "gpu.amd.com")
_CLASSES_TTL_S = 30.0


class ClaimBook:
    """Devices by node, claims by uid, DeviceClasses (read again every 30 s)."""

    def __init__(self, kube: Kube, gpu_drivers: tuple[str, ...] = GPU_DRIVERS) -> None:
        self.kube, self.gpu_drivers = kube, gpu_drivers
        self.slices: dict[str, list[Device]] = {}  # slice uid → its devices
        self._on_node: dict[str, list[Device]] = {}  # node → its devices, sorted (from slices)
        self.claims: dict[str, dict[str, Any]] = {}  # claim uid → claim
        self._by_name: dict[tuple[str, str], str] = {}  # (namespace, name) → uid
        self._classes: dict[str, tuple[str, ...]] = {}
        self._classes_read = -_CLASSES_TTL_S

    # -- watch events ---------------------------------------------------------------------

    def on_slice(self, event: str, obj: Mapping[str, Any]) -> set[str]:
        """A ResourceSlice event; returns the nodes whose devices changed."""
        uid = str(obj.get("metadata", {}).get("uid", ""))
        before = {d.node for d in self.slices.get(uid, [])}
        if event == "DELETED":
            self.slices.pop(uid, None)
        else:
            self.slices[uid] = devices_of_slice(obj)
        changed = before | {d.node for d in self.slices.get(uid, [])}
        for node in changed:  # the index is rebuilt here, not on every lookup
            found = [d for devices in self.slices.values() for d in devices if d.node == node]
            self._on_node[node] = sorted(found, key=lambda d: (d.driver, d.pool,
                                                               _natural(d.name)))
            if not found:
                del self._on_node[node]
        return changed

    def on_claim(self, event: str, obj: dict[str, Any]) -> None:
        """A ResourceClaim event."""
        meta = obj.get("metadata", {})
        uid, key = str(meta.get("uid", "")), (meta.get("namespace", ""), meta.get("name", ""))
        if event == "DELETED":
            self.claims.pop(uid, None)
            if self._by_name.get(key) == uid:
                del self._by_name[key]
        else:
            self.claims[uid], self._by_name[key] = obj, uid

    # -- sizes ----------------------------------------------------------------------------

    def _is_gpu(self, device: Device) -> bool:
        kind = device.attributes.get(device.driver, {}).get("type")
        return device.driver in self.gpu_drivers and kind in (None, "gpu")

    def devices_on(self, node: str) -> list[Device]:
        """Every published device of ``node``, in a stable order."""
        return self._on_node.get(node, [])

    def gpus_on(self, node: str) -> int:
        """GPU devices ``node``'s slices publish."""
        return sum(1 for d in self.devices_on(node) if self._is_gpu(d))

    def classes(self) -> dict[str, tuple[str, ...]]:
        """DeviceClass name → its CEL selectors (read from the API at most every 30 s)."""
        if time.monotonic() - self._classes_read >= _CLASSES_TTL_S:
            self._classes = self.kube.device_classes()
            self._classes_read = time.monotonic()
        return self._classes

    def gpu_demand(self, pod: Mapping[str, Any]) -> int:
        """GPUs the pod's claims ask for (requests whose class admits a GPU device).

        ClaimError when a request names no DeviceClass, or when no node publishes enough
        devices its class and selectors admit (the pod could never be bound: it is refused
        before it becomes a job)."""
        total = 0
        classes = self.classes()
        nodes = sorted(self._on_node)
        for spec in self._claim_specs(pod):
            requests, _ = claim_requests(spec)
            for request in requests:
                if request.device_class not in classes:
                    raise ClaimError("UnknownDeviceClass",
                                     f"request {request.name!r}: no DeviceClass "
                                     f"{request.device_class!r}")
                fitting = [n for n in nodes if _fits(request, classes, self.devices_on(n))]
                if not fitting:
                    raise ClaimError("NoMatchingDevices", f"request {request.name!r}: no node "
                                     f"publishes {request.count} {request.device_class} "
                                     "device(s) its selectors admit")
                one = DeviceRequest(request.name, request.device_class, 1, request.selectors)
                if any(self._is_gpu(d) and _fits(one, classes, [d])
                       for n in fitting for d in self.devices_on(n)):
                    total += request.count
        return total

    def _claim_specs(self, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        namespace = pod.get("metadata", {}).get("namespace", "")
        specs = []
        for entry in pod.get("spec", {}).get("resourceClaims") or []:
            if entry.get("resourceClaimTemplateName"):
                named = entry["resourceClaimTemplateName"]
                template = self.kube.claim_template(namespace, named)
                if template is None:
                    raise ClaimError("MissingClaimTemplate", f"no ResourceClaimTemplate {named!r}")
                specs.append(dict((template.get("spec") or {}).get("spec") or {}))
            elif entry.get("resourceClaimName"):
                claim = self._claim(namespace, entry["resourceClaimName"])
                if claim is None:
                    raise ClaimError("MissingClaim",
                                     f"no ResourceClaim {entry['resourceClaimName']!r}")
                specs.append(dict(claim.get("spec") or {}))
        return specs

    def _claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        uid = self._by_name.get((namespace, name))
        return self.claims.get(uid) if uid else None

    # -- allocation -----------------------------------------------------------------------

    def prepare(self, pod: dict[str, Any], node: str) -> bool:
        """Allocate the pod's claims on ``node`` and reserve them for it.

        True when the pod may be bound (no claims, or all allocated there); False while a
        claim made from a template does not exist yet (the pod's next event comes back);
        ClaimError when a claim cannot be had on ``node``."""
        meta = pod.get("metadata", {})
        entries = pod.get("spec", {}).get("resourceClaims") or []
        if not entries:
            return True
        generated = {s.get("name"): s.get("resourceClaimName")
                     for s in pod.get("status", {}).get("resourceClaimStatuses") or []}
        for entry in entries:
            name = entry.get("resourceClaimName") or generated.get(entry.get("name"))
            claim = self._claim(meta.get("namespace", ""), name) if name else None
            if claim is None:
                return False
            if not self._reserve(claim, node, meta["name"], meta["uid"]):
                return False
        return True

    def _reserve(self, claim: dict[str, Any], node: str, pod_name: str, pod_uid: str) -> bool:
        status = dict(claim.get("status") or {})
        reserved = list(status.get("reservedFor") or [])
        allocation = status.get("allocation")
        if allocation is not None:
            if _node_of(allocation) != node:
                raise ClaimError("ClaimElsewhere", f"claim {claim['metadata']['name']} is "
                                 f"allocated on {_node_of(allocation)}, the job runs on {node}")
            if any(r.get("uid") == pod_uid for r in reserved):
                return True
            status["reservedFor"] = [*reserved, {"resource": "pods", "name": pod_name,
                                                 "uid": pod_uid}]
        else:
            requests, constraints = claim_requests(claim.get("spec") or {})
            chosen = choose(requests, constraints, self.classes(), self.devices_on(node),
                            taken_by(self.claims.values(), claim["metadata"]["uid"]))
            status.update(allocation_status(chosen, node, pod_name, pod_uid))
        updated = self.kube.update_claim_status({**claim, "status": status})
        if updated is None:
            return False  # changed meanwhile: the watch brings the new one, the pod retries
        self.on_claim("MODIFIED", updated)
        log.info("claim %s/%s allocated on %s for pod %s", claim["metadata"]["namespace"],
                 claim["metadata"]["name"], node, pod_name)
        return True


def _fits(request: DeviceRequest, classes: Mapping[str, tuple[str, ...]],
          devices: list[Device]) -> bool:
    """True when ``devices`` hold what ``request`` asks for (other claims left aside)."""
    try:
        choose([request], [], classes, devices, set())
    except ClaimError as exc:
        if exc.reason != "DevicesUnavailable":
            raise
        return False
    return True


def _node_of(allocation: Mapping[str, Any]) -> str:
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                return str(field["values"][0])
    return ""


def _natural(name: str) -> tuple[str, int]:
    """``gpu-10`` after ``gpu-9``."""
    head = name.rstrip("0123456789")
    tail = name[len(head):]
    return head, int(tail) if tail else -1
