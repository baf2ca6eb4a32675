"""Discovery: ibnetdiscover and NVLink data → topology.yaml text and Topograph labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.topology import parse_topology_yaml
from scheduler.topology.config import BlockConfig, TreeConfig
from scheduler.topology.discovery import (
    SCHEME_NETWORK_TOPOLOGY,
    SCHEME_TOPOGRAPH_TIERS,
    discover,
    discover_labels,
    fnv64a_label,
    parse_ibnetdiscover,
    parse_nvlink,
    switch_tree,
)
from scheduler.topology.discovery.render import fnv1a64

DATA = Path(__file__).parents[2] / "data" / "topology"
IB = (DATA / "ibnetdiscover.txt").read_text()
GPUS = [f"gpu{i:03d}" for i in range(1, 17)]


def test_ibnetdiscover_switch_and_node_names_follow_topograph() -> None:
    fabric = parse_ibnetdiscover(IB)
    assert [s.name for s in fabric.switches] == [
        "spine01",
        "spine02",
        "leaf01",
        "leaf02",
        "leaf03",
        "leaf04",
    ]
    assert fabric.adapter_node("H-b8cef603001a0100") == "gpu001"
    assert len(fabric.adapters) == 33  # 16 nodes x 2 rails + one storage node


def test_switch_tree_merges_identical_spines_and_puts_nodes_on_their_first_rail() -> None:
    switches = switch_tree(parse_ibnetdiscover(IB), GPUS)
    assert switches[0].name == "spine01..spine02"
    assert switches[0].children == ("leaf01", "leaf02", "leaf03", "leaf04")
    leaf = {s.name: s.nodes for s in switches[1:]}
    assert leaf["leaf01"] == ("gpu001", "gpu002", "gpu003", "gpu004")  # mlx5_1 is on leaf02
    assert "stor01" not in leaf["leaf04"]


def test_nvlink_inputs_agree_in_every_format() -> None:
    per_node = {
        "gpu001": (DATA / "nvidia-smi-q-gpu001.txt").read_text(),
        "gpu016": (DATA / "nvidia-smi-q-gpu016.txt").read_text(),
    }
    from_smi = parse_nvlink(per_node)
    from_pdsh = parse_nvlink((DATA / "nvlink-pdsh.txt").read_text())
    from_csv = parse_nvlink((DATA / "nvlink.csv").read_text())
    assert from_smi["gpu001"].accelerator == "5f3c1d2e-8a4b-4c6d-9e0f-1a2b3c4d5e6f.32766"
    assert "gpu016" not in from_smi and "gpu016" not in from_pdsh  # fabric not completed
    assert from_pdsh == from_csv
    assert len(from_csv) == 15


def test_discover_writes_a_valid_topology_yaml_with_nvlink_blocks_as_default() -> None:
    text = discover(IB, (DATA / "nvlink.csv").read_text())
    topologies = parse_topology_yaml(text, known_nodes=[*GPUS, "stor01"])
    assert topologies.names == ("nvlink", "ib")
    block = topologies.default.config
    assert isinstance(block, BlockConfig)
    assert [len(b.nodes) for b in block.blocks] == [8, 4, 3]
    assert block.blocks[1].name.endswith(".1") and block.blocks[2].name.endswith(".2")
    assert block.block_sizes == (8, 16, 32)
    assert isinstance(topologies.get("ib").config, TreeConfig)


def test_discover_from_ibnetdiscover_alone_gives_the_tree_as_default() -> None:
    text = discover(IB, None, nodes=GPUS, tree_name="fabric")
    topologies = parse_topology_yaml(text)
    assert topologies.names == ("fabric",)
    assert "stor01" not in text


def test_discover_honours_block_sizes() -> None:
    text = discover(None, (DATA / "nvlink.csv").read_text(), block_sizes=[4, 8])
    block = parse_topology_yaml(text).default.config
    assert isinstance(block, BlockConfig) and block.block_sizes == (4, 8)


def test_discover_needs_some_input() -> None:
    with pytest.raises(ValueError, match="needs"):
        discover(None, None)


def test_labels_use_topographs_keys() -> None:
    labels = discover_labels(IB, (DATA / "nvlink-pdsh.txt").read_text(), nodes=GPUS)
    assert labels["gpu009"] == {
        f"{SCHEME_NETWORK_TOPOLOGY}/accelerator": "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a.1",
        f"{SCHEME_NETWORK_TOPOLOGY}/leaf": "leaf03",
        f"{SCHEME_NETWORK_TOPOLOGY}/spine": "spine01..spine02",
    }
    tiers = discover_labels(IB, (DATA / "nvlink.csv").read_text(), scheme=SCHEME_TOPOGRAPH_TIERS)
    assert tiers["gpu001"]["accelerator.topograph.run/domain"] == (
        "5f3c1d2e-8a4b-4c6d-9e0f-1a2b3c4d5e6f"
    )
    assert tiers["gpu001"]["fabric.topograph.run/tier-0"] == "leaf01"
    assert "accelerator.topograph.run/domain" not in tiers["gpu016"]


def test_long_label_values_become_fnv64a_hashes() -> None:
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C  # the FNV reference vector
    assert fnv64a_label("short") == "short"
    hashed = fnv64a_label("x" * 64)
    assert len(hashed) == 17 and hashed.startswith("x")
    assert fnv64a_label("") == ""
    assert fnv64a_label("a" * 64) != fnv64a_label("b" * 64)
