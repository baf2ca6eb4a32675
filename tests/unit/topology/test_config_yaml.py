"""topology.yaml parsing and its errors (file, line, reason)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.topology import TopologyConfigError, parse_topology_yaml
from scheduler.topology.config import BlockConfig, FlatConfig, RingConfig, Torus3dConfig, TreeConfig

DATA = Path(__file__).parents[2] / "data" / "topology"


def _error(text: str, **kwargs: object) -> TopologyConfigError:
    with pytest.raises(TopologyConfigError) as caught:
        parse_topology_yaml(text, **kwargs)  # type: ignore[arg-type]
    return caught.value


def test_sample_file_parses_every_kind_with_the_default_first() -> None:
    topologies = parse_topology_yaml((DATA / "topology.yaml").read_text())
    assert topologies.names == ("nvl", "ib", "rings", "pod", "plain")
    assert topologies.default.name == "nvl"
    kinds = [type(t.config) for t in topologies.topologies]
    assert kinds == [BlockConfig, TreeConfig, RingConfig, Torus3dConfig, FlatConfig]
    block = topologies.get("nvl").config
    assert isinstance(block, BlockConfig)
    assert block.block_sizes == (18, 36, 72, 144)
    assert block.blocks[1].nodes[0] == "n019"
    tree = topologies.get("ib").config
    assert isinstance(tree, TreeConfig)
    assert tree.switches[0].children == ("spine1", "spine2")


def test_cluster_default_topology_moves_to_the_front() -> None:
    text = """
- topology: a
  flat: true
- topology: b
  cluster_default: true
  flat: true
"""
    assert parse_topology_yaml(text).names == ("b", "a")


def test_without_cluster_default_the_first_topology_is_the_default() -> None:
    text = "- topology: a\n  flat: true\n- topology: b\n  flat: {alpha_step_rank: true}\n"
    topologies = parse_topology_yaml(text)
    assert topologies.default.name == "a"
    flat = topologies.get("b").config
    assert isinstance(flat, FlatConfig)
    assert flat.alpha_step_rank


def test_two_cluster_defaults_are_an_error_at_the_second() -> None:
    text = """- topology: a
  cluster_default: true
  flat: true
- topology: b
  cluster_default: true
  flat: true
"""
    error = _error(text, filename="t.yaml")
    assert (error.filename, error.line) == ("t.yaml", 4)
    assert "cluster_default" in error.reason


def test_unknown_key_names_its_line() -> None:
    text = """- topology: a
  block:
    blocks:
      - block: b1
        nodes: n[1-4]
        speed: 400
"""
    error = _error(text)
    assert error.line == 6
    assert "unknown key 'speed'" in error.reason


def test_unknown_node_is_an_error_when_the_cluster_nodes_are_given() -> None:
    text = "- topology: a\n  block:\n    blocks:\n      - block: b1\n        nodes: n[1-4]\n"
    error = _error(text, known_nodes={"n1", "n2", "n3"})
    assert error.line == 4
    assert "unknown node 'n4'" in error.reason


def test_node_in_two_blocks_is_an_error() -> None:
    error = _error((DATA / "bad-duplicate-node.yaml").read_text(), filename="bad.yaml")
    assert error.line == 8
    assert "'n4'" in error.reason and "b1" in error.reason and "b2" in error.reason


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ("[18, 40]", "power of two"),
        ("[18, 18]", "power of two"),
        ("[18, 72, 36]", "larger"),
        ("[18, 1179648]", "power of two"),
    ],
)
def test_block_sizes_must_be_powers_of_two_of_the_base(sizes: str, message: str) -> None:
    text = f"- topology: a\n  block:\n    block_sizes: {sizes}\n    blocks:\n      - block: b1\n"
    error = _error(text)
    assert error.line == 3
    assert message in error.reason


def test_a_topology_needs_exactly_one_kind() -> None:
    assert "exactly one" in _error("- topology: a\n  flat: true\n  ring: {rings: []}\n").reason
    assert "exactly one" in _error("- topology: a\n  cluster_default: true\n").reason


def test_topology_must_be_the_first_key() -> None:
    assert "first key" in _error("- flat: true\n  topology: a\n").reason


def test_duplicate_topology_names_are_an_error() -> None:
    error = _error("- topology: a\n  flat: true\n- topology: a\n  flat: true\n")
    assert error.line == 3


def test_yaml_syntax_errors_carry_a_line() -> None:
    error = _error("- topology: a\n  flat: [true\n")
    assert error.line >= 2
    assert "YAML" in error.reason


def test_empty_file_defines_no_topology() -> None:
    assert "no topology" in _error("").reason


def test_ring_larger_than_16_nodes_is_an_error() -> None:
    error = _error("- topology: r\n  ring:\n    rings:\n      - ring: r0\n        nodes: n[1-17]\n")
    assert "bigger than 16" in error.reason


def test_tree_errors_point_at_the_switch() -> None:
    base = "- topology: t\n  tree:\n    switches:\n"
    cycle = (
        base + "      - switch: a\n        children: b\n      - switch: b\n        children: a\n"
    )
    assert "not a tree" in _error(cycle).reason
    both = base + "      - switch: a\n        children: b\n        nodes: n1\n      - switch: b\n"
    assert _error(both).line == 4
    missing = base + "      - switch: a\n        children: zz\n"
    assert "invalid child" in _error(missing).reason
    two_parents = (
        base + "      - switch: a\n        children: c\n      - switch: b\n"
        "        children: c\n      - switch: c\n        nodes: n1\n"
    )
    error = _error(two_parents)
    assert error.line == 6 and "two parents" in error.reason


def test_torus_checks_dims_regions_and_placements() -> None:
    base = (
        "- topology: p\n  torus3d:\n    toruses:\n      - name: t\n"
        "        dims: {x: 2, y: 2, z: 1}\n"
    )
    assert "do not match" in _error(base + "        nodes: n[1-3]\n").reason
    regions = (
        base + "        regions:\n          - anchor: {x: 1, y: 0, z: 0}\n"
        "            dims: {x: 2, y: 1, z: 1}\n            nodes: n[1-2]\n"
    )
    assert "exceeds" in _error(regions).reason
    shape = (
        base + "        nodes: n[1-4]\n        placements:\n          - dims: {x: 3, y: 1, z: 1}\n"
    )
    assert "exceed torus" in _error(shape).reason


def test_torus_regions_map_nodes_x_major() -> None:
    text = """- topology: p
  torus3d:
    toruses:
      - name: t
        dims: {x: 2, y: 2, z: 1}
        regions:
          - anchor: {x: 0, y: 0, z: 0}
            dims: {x: 2, y: 1, z: 1}
            nodes: n[1-2]
        placements:
          - dims: {x: 1, y: 1, z: 1}
            anchor_spacing: {x: 1, y: 1, z: 1}
"""
    torus = parse_topology_yaml(text).default.config
    assert isinstance(torus, Torus3dConfig)
    assert torus.toruses[0].regions[0].nodes == ("n1", "n2")
    assert torus.toruses[0].placements[0].spacing.x == 1
