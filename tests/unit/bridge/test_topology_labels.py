"""Topograph labels on Kubernetes Nodes → a topology.yaml the core accepts."""

from __future__ import annotations

from agents.bridge.topology import topology_yaml
from scheduler.topology import parse_topology_yaml

ACC = "network.topology.nvidia.com/accelerator"


def test_accelerator_domains_become_blocks() -> None:
    nodes = {f"kwok-node-{i}": {ACC: f"block-{i // 4}"} for i in range(8)}
    text = topology_yaml(nodes)
    topologies = parse_topology_yaml(text, filename="bridge")
    assert topologies.names == ("k8s-nvlink",)
    entry = topologies.get("k8s-nvlink")
    assert entry.cluster_default
    blocks = {b.name: tuple(b.nodes) for b in entry.config.blocks}
    assert blocks == {"block-0": tuple(f"kwok-node-{i}" for i in range(4)),
                      "block-1": tuple(f"kwok-node-{i}" for i in range(4, 8))}


def test_switch_tiers_become_a_tree() -> None:
    nodes = {f"n{i}": {"network.topology.nvidia.com/leaf": f"leaf{i // 2}",
                       "network.topology.nvidia.com/spine": "s1"} for i in range(4)}
    topologies = parse_topology_yaml(topology_yaml(nodes), filename="bridge")
    assert topologies.names == ("k8s-fabric",)
    assert topologies.get("k8s-fabric").cluster_default


def test_no_labels_no_topology() -> None:
    assert topology_yaml({"n1": {}, "n2": {"other": "x"}}) == ""
