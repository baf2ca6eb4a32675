"""Dynamic Resource Allocation (resource.k8s.io/v1): which devices a pod's claims get (pure).

Sluice decides how many GPUs a job holds on each node (the core's allocation, as for any node);
on a Kubernetes node the bridge then picks *which* devices, as a node daemon picks GPU indices.
With DRA a GPU is a device in a **ResourceSlice** a driver publishes for its node (the NVIDIA
DRA driver: ``gpu.nvidia.com``); a pod asks for devices through **ResourceClaims** (its own, made
from a ResourceClaimTemplate, or one it names); a **DeviceClass** says which devices a request's
class admits. The bridge allocates a claim the way kube-scheduler's DRA plugin does: it writes
the claim's ``status.allocation`` (one result per device, the node in ``nodeSelector``) and
``reservedFor`` the pod, then binds the pod.

What is supported of a request: ``exactly`` with ``deviceClassName``, ``count``
(``allocationMode: ExactCount``), CEL ``selectors`` of the class and of the request, and the
claim's ``matchAttribute`` constraints. Selectors are compiled by Google's CEL implementation
(``cel-expr-python``) with ``device`` bound to ``{driver, attributes, capacity}`` as Kubernetes
binds it (attributes and capacities grouped by their domain, an unqualified name in the
driver's domain), with Kubernetes' own CEL functions (``quantity()``, ``semver()`` and their
members: :mod:`agents.bridge.cel_library`): a capacity is a quantity and a ``version``
attribute a semantic version, as Kubernetes binds them. ``firstAvailable``, ``allocationMode:
All`` and ``adminAccess`` are refused with a named reason, as is a selector that does not
compile. A selector whose evaluation fails for a device (a missing attribute)
does not admit that device.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from agents.bridge.cel_library import CelLibraryError, functions, quantity_value, semver_value

__all__ = [
    "ClaimError",
    "Device",
    "DeviceRequest",
    "allocation_status",
    "choose",
    "claim_requests",
    "devices_of_slice",
    "taken_by",
]


class ClaimError(ValueError):
    """A claim the bridge cannot allocate: ``reason`` names why (shown on the pod)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


DeviceKey = tuple[str, str, str]
"""(driver, pool, device name): what identifies a device across slices."""


@dataclass(frozen=True, slots=True)
class Device:
    """One device of a ResourceSlice, with what its selectors see."""

    driver: str
    pool: str
    name: str
    node: str
    attributes: Mapping[str, Mapping[str, Any]]
    """Domain → attribute name → value (string, int, bool or version text)."""
    capacity: Mapping[str, Mapping[str, str]]
    """Domain → capacity name → quantity text."""

    @property
    def key(self) -> DeviceKey:
        return self.driver, self.pool, self.name

    def as_cel(self) -> dict[str, Any]:
        """``device`` as a CEL selector reads it: capacities as quantities, ``version``
        attributes as semantic versions (agents.bridge.cel_library)."""
        return {"driver": self.driver,
                "attributes": {domain: {name: _cel_attribute(value) for name, value in
                                        values.items()}
                               for domain, values in self.attributes.items()},
                "capacity": {domain: {name: _cel_quantity(text) for name, text in values.items()}
                             for domain, values in self.capacity.items()}}


class VersionText(str):
    """A ``version`` attribute's text (a selector sees it as a semantic version)."""

    __slots__ = ()


def _cel_attribute(value: Any) -> Any:
    if isinstance(value, VersionText):
        try:
            return semver_value(value)
        except CelLibraryError:
            return str(value)  # the API server validates versions; keep what is there
    return value


def _cel_quantity(text: str) -> Any:
    try:
        return quantity_value(text)
    except CelLibraryError:
        return text


def _grouped(values: Mapping[str, Any], driver: str, read: Any) -> dict[str, dict[str, Any]]:
    grouped: dict[str, dict[str, Any]] = {}
    for qualified, value in values.items():
        domain, _, name = qualified.rpartition("/")
        grouped.setdefault(domain or driver, {})[name] = read(value)
    return grouped


def _attribute(value: Mapping[str, Any]) -> Any:
    for kind in ("string", "int", "bool"):
        if kind in value:
            return value[kind]
    if "version" in value:
        return VersionText(value["version"])
    return None


def devices_of_slice(obj: Mapping[str, Any]) -> list[Device]:
    """The devices of one ResourceSlice (the API's JSON); none when it is for no one node."""
    spec = obj.get("spec") or {}
    node = spec.get("nodeName") or ""
    driver = spec.get("driver") or ""
    pool = (spec.get("pool") or {}).get("name") or ""
    if not node or not driver:
        return []
    return [Device(driver, pool, str(d.get("name", "")), node,
                   _grouped(d.get("attributes") or {}, driver, _attribute),
                   _grouped(d.get("capacity") or {}, driver,
                            lambda v: str((v or {}).get("value", ""))))
            for d in spec.get("devices") or []]


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One request of a claim: ``count`` devices of ``device_class`` passing ``selectors``."""

    name: str
    device_class: str
    count: int
    selectors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Constraint:
    requests: tuple[str, ...]  # empty: every request of the claim
    attribute: str  # qualified: domain/name


def claim_requests(spec: Mapping[str, Any]) -> tuple[list[DeviceRequest], list[_Constraint]]:
    """The requests and ``matchAttribute`` constraints of a claim's spec (ClaimError when the
    claim asks for what the bridge does not allocate)."""
    devices = spec.get("devices") or {}
    requests = []
    for raw in devices.get("requests") or []:
        name = str(raw.get("name", ""))
        if raw.get("firstAvailable"):
            raise ClaimError("UnsupportedClaim", f"request {name!r}: firstAvailable")
        exactly = raw.get("exactly") or {}
        mode = exactly.get("allocationMode") or "ExactCount"
        if mode != "ExactCount":
            raise ClaimError("UnsupportedClaim", f"request {name!r}: allocationMode {mode}")
        if exactly.get("adminAccess"):
            raise ClaimError("UnsupportedClaim", f"request {name!r}: adminAccess")
        device_class = str(exactly.get("deviceClassName") or "")
        if not device_class:
            raise ClaimError("UnsupportedClaim", f"request {name!r} names no deviceClassName")
        count = int(exactly.get("count") or 1)
        selectors = tuple(str((s.get("cel") or {}).get("expression", ""))
                          for s in exactly.get("selectors") or [])
        requests.append(DeviceRequest(name, device_class, count, selectors))
    constraints = [_Constraint(tuple(c.get("requests") or ()), str(c["matchAttribute"]))
                   for c in devices.get("constraints") or [] if c.get("matchAttribute")]
    return requests, constraints


@cache
def _program(expression: str) -> Any:
    from cel_expr_python import cel  # noqa: PLC0415 - a 16 MB extension: only with DRA claims

    environment = cel.NewEnv(variables={"device": cel.Type.DYN}, functions=_library())
    try:
        return environment.compile(expression)
    except RuntimeError as exc:
        raise ClaimError("UnsupportedSelector", f"{expression!r}: {str(exc)[:300]}") from None


@cache
def _library() -> list[Any]:
    return functions()


def _admits(expression: str, device: Device) -> bool:
    result = _program(expression).eval(data={"device": device.as_cel()})
    return result.value() is True


def _attribute_of(device: Device, qualified: str) -> Any:
    domain, _, name = qualified.rpartition("/")
    return device.attributes.get(domain or device.driver, {}).get(name)


def choose(requests: Sequence[DeviceRequest], constraints: Sequence[_Constraint],
           classes: Mapping[str, Sequence[str]], devices: Iterable[Device],
           taken: set[DeviceKey]) -> list[tuple[str, Device]]:
    """``(request name, device)`` for every device the requests get from ``devices`` (one
    node's), none of them in ``taken``; ClaimError when they cannot all be had."""
    free = [d for d in devices if d.key not in taken]
    candidates: dict[str, list[Device]] = {}
    for request in requests:
        if request.device_class not in classes:
            raise ClaimError("UnknownDeviceClass", f"request {request.name!r}: no DeviceClass "
                             f"{request.device_class!r}")
        selectors = (*classes[request.device_class], *request.selectors)
        candidates[request.name] = [d for d in free if all(_admits(s, d) for s in selectors)]
    chosen = _pick(list(requests), candidates, list(constraints), set())
    if chosen is None:
        wanted = ", ".join(f"{r.count} {r.device_class}" for r in requests)
        found = ", ".join(f"{len(c)} for {n!r}" for n, c in candidates.items())
        raise ClaimError("DevicesUnavailable", f"the claim asks for {wanted}; free here: {found}")
    return chosen


def _pick(requests: list[DeviceRequest], candidates: dict[str, list[Device]],
          constraints: list[_Constraint], used: set[DeviceKey]) -> list[tuple[str, Device]] | None:
    """Devices for every request, honouring the first constraint by trying each value of its
    attribute in turn (then the rest, recursively); None when there is no way."""
    if constraints:
        first, rest = constraints[0], constraints[1:]
        bound = set(first.requests) or {r.name for r in requests}
        values = sorted({str(v) for name in bound for d in candidates.get(name, [])
                         if (v := _attribute_of(d, first.attribute)) is not None})
        for value in values:
            narrowed = {name: [d for d in found if name not in bound
                               or str(_attribute_of(d, first.attribute)) == value]
                        for name, found in candidates.items()}
            found_all = _pick(requests, narrowed, rest, used)
            if found_all is not None:
                return found_all
        return None
    chosen: list[tuple[str, Device]] = []
    used = set(used)
    for request in requests:
        fits = [d for d in candidates[request.name] if d.key not in used][: request.count]
        if len(fits) < request.count:
            return None
        used.update(d.key for d in fits)
        chosen += [(request.name, d) for d in fits]
    return chosen


def taken_by(claims: Iterable[Mapping[str, Any]], except_uid: str = "") -> set[DeviceKey]:
    """Devices held by the allocated claims (but the one of ``except_uid``)."""
    taken: set[DeviceKey] = set()
    for claim in claims:
        if (claim.get("metadata") or {}).get("uid") == except_uid:
            continue
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or []:
            taken.add((str(result.get("driver")), str(result.get("pool")),
                       str(result.get("device"))))
    return taken


def allocation_status(chosen: Sequence[tuple[str, Device]], node: str, pod_name: str,
                      pod_uid: str) -> dict[str, Any]:
    """The claim's ``status``: the devices, the node they are on, the pod reserving them."""
    return {
        "allocation": {
            "devices": {"results": [{"request": request, "driver": d.driver, "pool": d.pool,
                                     "device": d.name} for request, d in chosen]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]},
        },
        "reservedFor": [{"resource": "pods", "name": pod_name, "uid": pod_uid}],
    }
