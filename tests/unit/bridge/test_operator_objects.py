"""A SluiceCluster's objects and its scaler (pure parts of the operator)."""

from __future__ import annotations

from typing import Any

from agents.operator.objects import cluster_objects
from agents.operator.scaler import desired_replicas

CR: dict[str, Any] = {
    "metadata": {"name": "demo", "namespace": "ml", "uid": "cr-uid"},
    "spec": {"image": "sluice:1", "kafkaBootstrap": "kafka:9092", "nodeSets": [
        {"name": "gpu", "replicas": 2, "cpus": 8, "memMB": 4096, "gpus": 8}]},
}


def test_objects_are_owned_and_named() -> None:
    objects = cluster_objects(CR, {"gpu": 5})
    names = [(o["kind"], o["metadata"]["name"]) for o in objects]
    assert names == [("Deployment", "demo-worker"), ("Deployment", "demo-projections"),
                     ("Service", "demo-projections"), ("StatefulSet", "demo-gpu")]
    for obj in objects:
        (owner,) = obj["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("SluiceCluster",
                                                                      "cr-uid", True)
    sts = objects[-1]
    assert sts["spec"]["replicas"] == 5
    container = sts["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "8", "memory": "4096Mi"},
                                      "limits": {"nvidia.com/gpu": "8"}}
    assert objects[0]["spec"]["strategy"] == {"type": "Recreate"}


def test_spec_replicas_without_a_scaler_choice() -> None:
    assert cluster_objects(CR, {})[-1]["spec"]["replicas"] == 2


def test_scaler_follows_demand_within_bounds() -> None:
    nodeset = {"name": "gpu", "minReplicas": 1, "maxReplicas": 6, "partition": "gpu"}
    pending = [{"nodes_min": 4, "partition": "gpu"}, {"nodes_min": 9, "partition": "cpu"}]
    assert desired_replicas(nodeset, 1, pending, busy=1) == 5
    assert desired_replicas(nodeset, 1, pending * 3, busy=1) == 6
    assert desired_replicas(nodeset, 4, [], busy=0) == 1
