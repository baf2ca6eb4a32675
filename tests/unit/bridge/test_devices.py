"""DRA device choice (agents.bridge.devices): ResourceSlices read as Kubernetes publishes them,
claims' requests, CEL selectors of the class and the request (Google's CEL), matchAttribute
constraints, devices other claims hold, and the status written to the claim."""

from __future__ import annotations

from typing import Any

import pytest

from agents.bridge.devices import (
    ClaimError,
    allocation_status,
    choose,
    claim_requests,
    devices_of_slice,
    taken_by,
)

GPU_CLASS = {"gpu.nvidia.com": ("device.driver == 'gpu.nvidia.com' && "
                                "device.attributes['gpu.nvidia.com'].type == 'gpu'",)}


def gpu_slice(node: str, count: int = 8, product: str = "H100",
              domains: tuple[str, ...] = ("nvl-0",)) -> dict[str, Any]:
    devices = [{"name": f"gpu-{i}", "attributes": {
        "type": {"string": "gpu"}, "productName": {"string": product}, "index": {"int": i},
        "resource.kubernetes.io/pcieRoot": {"string": domains[i * len(domains) // count]}},
        "capacity": {"memory": {"value": "80Gi"}}} for i in range(count)]
    devices.append({"name": "mig-0", "attributes": {"type": {"string": "mig"}}})
    return {"metadata": {"uid": f"slice-{node}"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def claim_spec(count: int, selectors: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    exactly = {"deviceClassName": "gpu.nvidia.com", "count": count,
               "selectors": [{"cel": {"expression": s}} for s in selectors], **extra}
    return {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}


def test_a_slice_groups_attributes_by_domain_and_keeps_its_node_and_pool() -> None:
    devices = devices_of_slice(gpu_slice("n1", 2))
    assert [d.key for d in devices] == [("gpu.nvidia.com", "n1", "gpu-0"),
                                        ("gpu.nvidia.com", "n1", "gpu-1"),
                                        ("gpu.nvidia.com", "n1", "mig-0")]
    first = devices[0]
    assert first.node == "n1"
    assert first.attributes["gpu.nvidia.com"] == {"type": "gpu", "productName": "H100",
                                                  "index": 0}
    assert first.attributes["resource.kubernetes.io"] == {"pcieRoot": "nvl-0"}
    assert first.capacity == {"gpu.nvidia.com": {"memory": "80Gi"}}
    assert devices_of_slice({"spec": {"driver": "d", "allNodes": True, "devices": [{}]}}) == []


def test_the_class_selector_admits_gpus_not_mig_slices_and_count_is_honoured() -> None:
    requests, constraints = claim_requests(claim_spec(3))
    chosen = choose(requests, constraints, GPU_CLASS, devices_of_slice(gpu_slice("n1")), set())
    assert [(r, d.name) for r, d in chosen] == [("gpus", "gpu-0"), ("gpus", "gpu-1"),
                                                ("gpus", "gpu-2")]


def test_devices_held_by_other_claims_are_not_given_again() -> None:
    devices = devices_of_slice(gpu_slice("n1", 4))
    held = {"metadata": {"uid": "other"}, "status": {"allocation": {"devices": {"results": [
        {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0"},
        {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-2"}]}}}}
    taken = taken_by([held, {"metadata": {"uid": "free"}}])
    requests, constraints = claim_requests(claim_spec(2))
    chosen = choose(requests, constraints, GPU_CLASS, devices, taken)
    assert [d.name for _, d in chosen] == ["gpu-1", "gpu-3"]
    with pytest.raises(ClaimError) as error:
        choose(*claim_requests(claim_spec(3)), GPU_CLASS, devices, taken)
    assert error.value.reason == "DevicesUnavailable"
    assert taken_by([held], except_uid="other") == set()


def test_request_selectors_narrow_and_a_missing_attribute_does_not_admit() -> None:
    devices = devices_of_slice(gpu_slice("n1", 2, product="A100"))
    spec = claim_spec(1, ("device.attributes['gpu.nvidia.com'].productName == 'H100'",))
    with pytest.raises(ClaimError, match="DevicesUnavailable"):
        choose(*claim_requests(spec), GPU_CLASS, devices, set())
    spec = claim_spec(1, ("device.attributes['gpu.nvidia.com'].nvlinkGen >= 4",))
    with pytest.raises(ClaimError, match="DevicesUnavailable"):
        choose(*claim_requests(spec), GPU_CLASS, devices, set())
    spec = claim_spec(1, ("device.attributes['gpu.nvidia.com'].index == 1",))
    assert [d.name for _, d in choose(*claim_requests(spec), GPU_CLASS, devices, set())] == [
        "gpu-1"]


def test_match_attribute_keeps_every_device_in_one_domain() -> None:
    devices = devices_of_slice(gpu_slice("n1", 8, domains=("nvl-0", "nvl-1")))
    held = {"metadata": {"uid": "x"}, "status": {"allocation": {"devices": {"results": [
        {"driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0"}]}}}}
    spec = claim_spec(4)
    spec["devices"]["constraints"] = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    chosen = choose(*claim_requests(spec), GPU_CLASS, devices, taken_by([held]))
    # gpu-0 is held, so nvl-0 has only 3 free: all 4 come from nvl-1
    assert [d.name for _, d in chosen] == ["gpu-4", "gpu-5", "gpu-6", "gpu-7"]
    spec = claim_spec(5)
    spec["devices"]["constraints"] = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    with pytest.raises(ClaimError, match="DevicesUnavailable"):
        choose(*claim_requests(spec), GPU_CLASS, devices, set())


@pytest.mark.parametrize(("spec", "reason"), [
    (claim_spec(1, allocationMode="All"), "UnsupportedClaim"),
    (claim_spec(1, adminAccess=True), "UnsupportedClaim"),
    ({"devices": {"requests": [{"name": "a", "firstAvailable": [{"name": "x"}]}]}},
     "UnsupportedClaim"),
    ({"devices": {"requests": [{"name": "a", "exactly": {"count": 1}}]}}, "UnsupportedClaim"),
])
def test_what_the_bridge_does_not_allocate_is_refused_with_a_reason(
        spec: dict[str, Any], reason: str) -> None:
    with pytest.raises(ClaimError) as error:
        claim_requests(spec)
    assert error.value.reason == reason


def test_an_unknown_class_or_a_selector_cel_cannot_compile_is_named() -> None:
    devices = devices_of_slice(gpu_slice("n1", 1))
    requests, _ = claim_requests({"devices": {"requests": [{"name": "a", "exactly": {
        "deviceClassName": "tpu.google.com"}}]}})
    with pytest.raises(ClaimError, match="UnknownDeviceClass"):
        choose(requests, [], GPU_CLASS, devices, set())
    spec = claim_spec(1, ("device.capacity['gpu.nvidia.com'].memory.nosuchFunction() >= 0",))
    with pytest.raises(ClaimError) as error:
        choose(*claim_requests(spec), GPU_CLASS, devices, set())
    assert error.value.reason == "UnsupportedSelector"


def test_the_status_names_the_devices_the_node_and_the_pod() -> None:
    devices = devices_of_slice(gpu_slice("n7", 2))
    chosen = choose(*claim_requests(claim_spec(2)), GPU_CLASS, devices, set())
    status = allocation_status(chosen, "n7", "train-0", "uid-0")
    assert status["allocation"]["devices"]["results"] == [
        {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "n7", "device": "gpu-0"},
        {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "n7", "device": "gpu-1"}]
    assert status["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"] == [
        {"key": "metadata.name", "operator": "In", "values": ["n7"]}]
    assert status["reservedFor"] == [{"resource": "pods", "name": "train-0", "uid": "uid-0"}]


def version_slice(node: str) -> dict[str, Any]:
    """Two GPUs of one node: 80 GiB on driver 550.54.15, 40 GiB on driver 535.0.1."""
    devices = [{"name": name, "attributes": {"type": {"string": "gpu"},
                                             "driverVersion": {"version": version}},
                "capacity": {"memory": {"value": memory}}}
               for name, memory, version in (("gpu-0", "80Gi", "550.54.15"),
                                             ("gpu-1", "40Gi", "535.0.1"))]
    return {"spec": {"driver": "gpu.nvidia.com", "nodeName": node, "pool": {"name": node},
                     "devices": devices}}


@pytest.mark.parametrize(("selector", "admitted"), [
    ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('48Gi')) >= 0", ["gpu-0"]),
    ("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('81920Mi'))", ["gpu-1"]),
    ("device.capacity['gpu.nvidia.com'].memory == quantity('40960Mi')", ["gpu-1"]),
    ("device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('540.0.0'))",
     ["gpu-0"]),
    ("device.attributes['gpu.nvidia.com'].driverVersion.major() >= 535", ["gpu-0", "gpu-1"]),
    ("device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('v535', true)) > 0",
     ["gpu-0", "gpu-1"]),
    # evaluation fails (a version compared with a quantity; a bad quantity): no device
    ("device.attributes['gpu.nvidia.com'].driverVersion.compareTo(quantity('1')) != 0", []),
    ("quantity('lots').sign() >= 0", []),
])
def test_kubernetes_quantity_and_semver_functions_select_devices(selector: str,
                                                                 admitted: list[str]) -> None:
    devices = devices_of_slice(version_slice("n1"))
    spec = claim_spec(len(admitted) or 1, (selector,))
    if not admitted:
        with pytest.raises(ClaimError, match="DevicesUnavailable"):
            choose(*claim_requests(spec), GPU_CLASS, devices, set())
        return
    chosen = choose(*claim_requests(spec), GPU_CLASS, devices, set())
    assert [d.name for _r, d in chosen] == admitted
