"""``sluice topology discover|check`` on the shipped sample outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from scheduler.topology import parse_topology_yaml

DATA = Path(__file__).resolve().parents[2] / "data" / "topology"


def test_discover_writes_a_valid_topology_with_nvlink_blocks_and_the_switch_tree(
    tmp_path: Path,
) -> None:
    out = tmp_path / "topology.yaml"

    status = main(["topology", "discover", "--ibnetdiscover", str(DATA / "ibnetdiscover.txt"),
                   "--nvlink", str(DATA / "nvlink.csv"), "-o", str(out)])

    assert status == 0
    topologies = parse_topology_yaml(out.read_text())
    assert topologies.names == ("nvlink", "ib")
    assert topologies.get("nvlink").cluster_default


def test_discover_prints_topograph_node_labels(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["topology", "discover", "--ibnetdiscover", str(DATA / "ibnetdiscover.txt"),
                   "--labels"])

    labels = json.loads(capsys.readouterr().out)
    assert status == 0
    assert labels["gpu001"]["network.topology.nvidia.com/leaf"] == "leaf01"


def test_check_names_the_file_line_and_reason_of_a_bad_topology(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["topology", "check", str(DATA / "bad-duplicate-node.yaml")])

    assert status == 1
    assert "bad-duplicate-node.yaml:8: node 'n4' appears in blocks" in capsys.readouterr().err


def test_discover_without_inputs_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", "discover"]) == 2
    assert "give --ibnetdiscover" in capsys.readouterr().err
