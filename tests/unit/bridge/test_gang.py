"""A Job's pods as one Sluice job: sizes from requests, intent from annotations."""

from __future__ import annotations

from typing import Any

import pytest

from agents.bridge.gang import Gang, GangError, gang_of, gang_size, job_spec
from agents.bridge.quantity import QuantityError, cpus, mem_mb


def _pod(requests: dict[str, str] | None = None, owner: str | None = "train",
         annotations: dict[str, str] | None = None) -> dict[str, Any]:
    refs = [{"kind": "Job", "name": owner, "uid": "job-uid", "controller": True}] if owner else []
    return {"metadata": {"name": "train-0", "namespace": "ml", "uid": "pod-uid",
                         "ownerReferences": refs, "annotations": annotations or {}},
            "spec": {"schedulerName": "sluice", "containers": [
                {"name": "main", "resources": {"requests": requests or {}}}]}}


def test_quantities() -> None:
    assert cpus("500m") == 1
    assert cpus("2") == 2
    assert cpus("2500m") == 3
    assert mem_mb("4Gi") == 4096
    assert mem_mb("1G") == 954
    with pytest.raises(QuantityError):
        cpus("lots")


def test_a_job_is_one_gang_and_a_bare_pod_its_own() -> None:
    assert gang_of(_pod()) == ("job-uid", "Job", "ml", "train")
    assert gang_of(_pod(owner=None)) == ("pod-uid", "Pod", "ml", "train-0")


def test_gang_size_is_parallelism_and_needs_matching_completions() -> None:
    assert gang_size({"spec": {"parallelism": 4, "completions": 4}}) == 4
    assert gang_size({"spec": {"parallelism": 3}}) == 3
    assert gang_size(None) == 1
    with pytest.raises(GangError) as err:
        gang_size({"spec": {"parallelism": 2, "completions": 8}})
    assert err.value.reason == "GangShape"


def test_spec_from_requests_and_annotations() -> None:
    gang = Gang("job-uid", "Job", "ml", "train", 4)
    spec = job_spec(gang, _pod({"cpu": "3500m", "memory": "8Gi", "nvidia.com/gpu": "8"}), {
        "sluice.dev/segment": "4", "sluice.dev/exclusive": "topo",
        "sluice.dev/requeue": "expedite", "sluice.dev/partition": "gpu",
        "sluice.dev/qos": "high", "sluice.dev/account": "vision",
        "sluice.dev/time-limit": "1:00:00"}, user="alice")
    assert (spec["nodes_min"], spec["ntasks"], spec["cpus_per_task"]) == (4, 4, 4)
    assert (spec["mem_per_node_mb"], spec["gpus_per_node"]) == (8192, 8)
    assert spec["segment"] == 4 and spec["exclusive_topo"] and not spec["exclusive"]
    assert spec["requeue"] == "expedite"
    assert (spec["partition"], spec["qos"], spec["account"]) == ("gpu", "high", "vision")
    assert spec["time_limit_s"] == 3600
    assert spec["name"] == "ml/train" and spec["workdir"] == "/"


@pytest.mark.parametrize(("annotations", "reason"), [
    ({"sluice.dev/segment": "four"}, "BadAnnotation"),
    ({"sluice.dev/exclusive": "yes"}, "BadAnnotation"),
    ({"sluice.dev/requeue": "always"}, "BadAnnotation"),
    ({"sluice.dev/time-limit": "soon"}, "BadAnnotation"),
])
def test_bad_annotations_are_named(annotations: dict[str, str], reason: str) -> None:
    with pytest.raises(GangError) as err:
        job_spec(Gang("k", "Job", "ml", "train", 2), _pod(), annotations, user="alice")
    assert err.value.reason == reason


def test_bad_requests_are_named() -> None:
    with pytest.raises(GangError) as err:
        job_spec(Gang("k", "Job", "ml", "train", 2), _pod({"cpu": "many"}), {}, user="alice")
    assert err.value.reason == "BadRequests"


@pytest.mark.parametrize("name", ["example.com/fpga", "amd.com/gpu", "hugepages-2Mi"])
def test_a_resource_sluice_does_not_count_is_refused(name: str) -> None:
    # It was ignored: the pod was bound to any node, where the kubelet refuses it (OutOf...)
    with pytest.raises(GangError) as err:
        job_spec(Gang("k", "Job", "ml", "train", 1), _pod({"cpu": "1", name: "2"}), {},
                 user="alice")
    assert err.value.reason == "UnsupportedResource" and name in err.value.detail


def test_gpus_and_ephemeral_storage_are_accepted() -> None:
    spec = job_spec(Gang("k", "Job", "ml", "train", 1), _pod(
        {"cpu": "1", "nvidia.com/gpu": "2", "ephemeral-storage": "1Gi", "example.com/x": "0"}),
        {}, user="alice")
    assert spec["gpus_per_node"] == 2


def test_the_namespaces_user_owns_the_job_and_a_pod_cannot_choose_it() -> None:
    gang = Gang("k", "Job", "ml", "train", 1)
    assert job_spec(gang, _pod(), {}, user="alice")["user"] == "alice"
    forged = job_spec(gang, _pod(annotations={"sluice.dev/user": "root"}),
                      {"sluice.dev/user": "root"}, user="alice")
    assert forged["user"] == "alice"


def test_without_a_user_there_is_no_job_never_one_of_the_bridges_own() -> None:
    # It was the bridge's own user (root's standing in Sluice for any namespace's pods)
    gang = Gang("k", "Job", "ml", "train", 1)
    with pytest.raises(GangError) as err:
        job_spec(gang, _pod(annotations={"sluice.dev/user": "alice"}),
                 {"sluice.dev/user": "alice"})
    assert err.value.reason == "NoSluiceUser" and "ml" in err.value.detail


@pytest.mark.parametrize("user", ["al ice", "../root", "-rf", "a" * 65, "bob;id"])
def test_a_namespace_user_that_is_no_user_name_is_named(user: str) -> None:
    with pytest.raises(GangError) as err:
        job_spec(Gang("k", "Job", "ml", "train", 1), _pod(), {}, user=user)
    assert err.value.reason == "BadAnnotation" and "ml" in err.value.detail
