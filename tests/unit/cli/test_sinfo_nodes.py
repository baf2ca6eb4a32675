"""sinfo's ``-n/--nodes`` (only these nodes) and ``-a/--all`` (accepted: Sluice hides no
partition), which administrators type and sluice nodes once refused as unknown."""

from __future__ import annotations

import argparse

import pytest

from cli.nodes_cmd import add_node_options, nodes_named

NODES = [{"name": f"node{i:02d}"} for i in range(1, 6)]


def test_nodes_keeps_the_nodes_of_a_host_list() -> None:
    assert [n["name"] for n in nodes_named(NODES, "node[02-03],node05")] == [
        "node02", "node03", "node05"]
    assert nodes_named(NODES, "") == NODES


def test_the_options_parse_as_sinfos() -> None:
    parser = argparse.ArgumentParser(add_help=False)
    add_node_options(parser)
    args = parser.parse_args(["-a", "-n", "node0[1-2]"])
    assert (args.all, args.nodes) == (True, "node0[1-2]")
    with pytest.raises(ValueError):
        nodes_named(NODES, "node[02-")
