"""topology.conf parsing: imported as the topology named ``default``."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.topology import TopologyConfigError, parse_topology_conf
from scheduler.topology.config import BlockConfig, RingConfig, TreeConfig

DATA = Path(__file__).parents[2] / "data" / "topology"


def test_tree_conf_becomes_the_default_topology() -> None:
    topologies = parse_topology_conf((DATA / "topology-tree.conf").read_text())
    assert topologies.names == ("default",)
    tree = topologies.default.config
    assert isinstance(tree, TreeConfig)
    assert [s.name for s in tree.switches][:3] == ["core", "spine1", "spine2"]
    assert tree.switches[3].nodes[-1] == "n16"


def test_block_conf_keeps_block_sizes_and_order() -> None:
    block = parse_topology_conf((DATA / "topology-block.conf").read_text()).default.config
    assert isinstance(block, BlockConfig)
    assert block.block_sizes == (30, 120)
    assert [b.name for b in block.blocks] == ["block1", "block2", "block3", "block4"]


def test_keys_are_case_insensitive_and_lines_continue() -> None:
    text = "# rings\nringname=r0 \\\n  nodes=n[1-4]\nRingName=r1 Nodes=n[5-8]  # comment\n"
    rings = parse_topology_conf(text).default.config
    assert isinstance(rings, RingConfig)
    assert rings.rings[0].nodes == ("n1", "n2", "n3", "n4")
    assert rings.rings[1].line == 4


def test_block_without_nodes_is_a_gap() -> None:
    block = parse_topology_conf(
        "BlockName=b1 Nodes=n[1-4]\nBlockName=gap\nBlockName=b3 Nodes=n[5-8]\n"
    )
    config = block.default.config
    assert isinstance(config, BlockConfig)
    assert config.blocks[1].nodes == ()


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("BlockName=b1 Nodes=n[1-4]\nBlockSizes=4,6\n", 2, "Invalid BlockSizes"),
        ("SwitchName=s1 Nodes=n1\nBlockName=b1 Nodes=n2\n", 2, "mixes"),
        ("SwitchName=s1 Nodes=n1 Speed=3\n", 1, "unknown key 'Speed'"),
        ("Nodes=n1\n", 1, "unknown key 'Nodes'"),
        ("BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[4-5]\n", 2, "'n4'"),
        ("BlockName=b1 Nodes=n[1-4]\nBlockName=b1 Nodes=n[5-8]\n", 2, "defined twice"),
        ("BlockName=b1 Nodes=n[1-4\n", 1, "unbalanced"),
        ("SwitchName=s1 Nodes=n1 Nodes=n2\n", 1, "twice"),
        ("\n# nothing\n", 1, "defines no"),
        ("BlockSizes=4\nBlockSizes=8\nBlockName=b Nodes=n1\n", 2, "given twice"),
    ],
)
def test_bad_conf_files_name_line_and_reason(text: str, line: int, message: str) -> None:
    with pytest.raises(TopologyConfigError) as caught:
        parse_topology_conf(text, filename="topology.conf")
    assert caught.value.filename == "topology.conf"
    assert caught.value.line == line
    assert message in caught.value.reason


def test_sample_bad_block_sizes_file_is_rejected() -> None:
    with pytest.raises(TopologyConfigError, match=r"bad-block-sizes\.conf:3: Invalid BlockSizes"):
        parse_topology_conf(
            (DATA / "bad-block-sizes.conf").read_text(), filename="bad-block-sizes.conf"
        )


def test_unknown_node_with_known_nodes() -> None:
    with pytest.raises(TopologyConfigError, match="unknown node 'n9'"):
        parse_topology_conf("SwitchName=s1 Nodes=n[8-9]\n", known_nodes=["n8"])
