"""Hierarchical resources: resources.yaml, --licenses/--resources, Modes 1-3, power caps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scheduler.resources import (
    HresUsage,
    LicenseRequest,
    LicenseSpec,
    LicenseSyntaxError,
    Mode,
    ResourcesConfig,
    ResourcesConfigError,
    build_hres_index,
    can_run,
    charge,
    check_block_mapping,
    check_spec,
    combine_options,
    eligible_nodes,
    layered_budget,
    parse_licenses,
    parse_resources_yaml,
    release,
)
from scheduler.topology import (
    Availability,
    NamedTopology,
    Placement,
    PlacementRequest,
    TopologySet,
    Unplaceable,
    build_index,
    place,
)
from scheduler.topology.block import BlockIndex
from scheduler.topology.config import BlockConfig, BlockDef
from scheduler.topology.hostlist import expand

DATA = Path(__file__).parents[2] / "data" / "topology"
NODES = list(expand("node[01-32]"))


@pytest.fixture(scope="module")
def config() -> ResourcesConfig:
    return parse_resources_yaml((DATA / "resources.yaml").read_text(), known_nodes=NODES)


def _nodes(text: str) -> list[str]:
    return list(expand(text))


def test_sample_file_parses_three_modes(config: ResourcesConfig) -> None:
    assert config.names == ("flat", "natural", "power")
    assert [r.mode for r in config.resources] == [Mode.MODE_2, Mode.MODE_1, Mode.MODE_3]
    power = config.get("power")
    assert power.topology == "blk1" and power.variable("full_gpu_node") == 2000


def test_mode3_effective_capacity_subtracts_every_base_below(config: ResourcesConfig) -> None:
    index = build_hres_index(config, NODES)
    power = index.resources["power"]
    assert power.tree is not None
    root = power.tree.root
    assert power.totals[root] == 130_000 - 10_000 - 8_000 - 3_000 - 2_000 - 5_000
    assert power.totals[4] == 60_000 - 3_000 - 5_000  # rack node[01-16]
    assert power.totals[0] == 40_000 - 5_000  # PDU node[01-08]
    assert len(power.tree.leaves) == 4 and all(len(p) == 3 for p in power.tree.paths)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "- resource: a\n  mode: MODE_1\n  topology: t\n  layers: [{nodes: n1, count: 1}]\n",
            3,
            "only valid for MODE_3",
        ),
        ("- resource: a\n  mode: MODE_4\n  layers: [{nodes: n1, count: 1}]\n", 2, "MODE_1"),
        ("- mode: MODE_1\n  resource: a\n", 1, "first key"),
        (
            "- resource: a\n  mode: MODE_1\n  colour: red\n  layers: [{nodes: n1, count: 1}]\n",
            3,
            "unknown key",
        ),
        (
            "- resource: a\n  mode: MODE_2\n  layers:\n    - nodes: n1\n      count: 1\n"
            "      base: [{name: x, value: 2}]\n",
            4,
            "greater than count",
        ),
        (
            "- resource: a\n  mode: MODE_3\n  layers:\n    - {nodes: 'n[1-2]', count: 4}\n"
            "    - {nodes: 'n[3-4]', count: 4}\n",
            5,
            "rooted tree",
        ),
        (
            "- resource: a\n  mode: MODE_3\n  layers:\n    - {nodes: 'n[1-4]', count: 9}\n"
            "    - {nodes: 'n[1-2]', count: 4}\n    - {nodes: 'n[2-3]', count: 4}\n",
            6,
            "overlap",
        ),
        (
            "- resource: a\n  mode: MODE_3\n  layers:\n    - {nodes: 'n[1-4]', count: 9}\n"
            "    - {nodes: 'n[1-2]', count: 4}\n    - {nodes: 'n1', count: 4}\n"
            "    - {nodes: 'n[3-4]', count: 4}\n",
            6,
            "uniform depth",
        ),
        (
            "- resource: a\n  mode: MODE_2\n  layers:\n    - {nodes: n1, count: 1}\n"
            "    - {nodes: n1, count: 2}\n",
            5,
            "duplicate layer",
        ),
        ("- resource: a\n  mode: MODE_1\n  layers: [{nodes: zz1, count: 1}]\n", 3, "unknown node"),
        (
            "- resource: a\n  mode: MODE_1\n  layers: [{nodes: n1, count: 1}]\n"
            "- resource: a\n  mode: MODE_1\n  layers: [{nodes: n1, count: 1}]\n",
            4,
            "twice",
        ),
        ("- resource: a\n  mode: MODE_1\n  layers: [{nodes: n1, count: -2}]\n", 3, "at least -1"),
    ],
)
def test_bad_resources_files_name_line_and_reason(text: str, line: int, message: str) -> None:
    with pytest.raises(ResourcesConfigError) as caught:
        parse_resources_yaml(text, filename="r.yaml", known_nodes=["n1", "n2", "n3", "n4"])
    assert (caught.value.filename, caught.value.line) == ("r.yaml", line)
    assert message in caught.value.reason


def test_resource_names_must_not_clash_with_cluster_licenses() -> None:
    with pytest.raises(ResourcesConfigError, match="clashes"):
        parse_resources_yaml(
            "- resource: matlab\n  mode: MODE_1\n  layers: [{nodes: n1, count: 1}]\n",
            cluster_licenses=["matlab"],
        )


def test_parse_licenses_follows_slurms_syntax(config: ResourcesConfig) -> None:
    spec = parse_licenses("flat:2,natural:1;natural=3,extra,zero:0")
    assert spec.items == (
        LicenseRequest("flat", 2),
        LicenseRequest("natural", 4),
        LicenseRequest("extra", 1),
    )
    assert parse_licenses("a|b:2").any_of
    assert parse_licenses("natural(node[01-16]):30").items == (
        LicenseRequest("natural", 30, "node[01-16]"),
    )
    assert parse_licenses("power:full_gpu_node", config).items == (LicenseRequest("power", 2000),)
    assert parse_licenses("") == LicenseSpec()
    assert combine_options("flat:1", "power:full_node") == "flat:1,power:full_node"


@pytest.mark.parametrize("text", ["a b", "a|b,c", "a:-1", "power:no_such", "a(n1:2", ":3"])
def test_parse_licenses_rejects_malformed_strings(text: str, config: ResourcesConfig) -> None:
    with pytest.raises(LicenseSyntaxError):
        parse_licenses(text, config)


def test_only_one_mode3_resource_per_job() -> None:
    text = "\n".join(
        f"- resource: {name}\n  mode: MODE_3\n  layers: [{{nodes: 'n[1-2]', count: 10}}]"
        for name in ("power", "cooling")
    )
    two = parse_resources_yaml(text)
    assert "only one MODE_3" in (check_spec(parse_licenses("power:1,cooling:1"), two) or "")
    assert check_spec(parse_licenses("power:1"), two) is None


def test_mode1_charges_the_largest_overlapping_layer_once(config: ResourcesConfig) -> None:
    index = build_hres_index(config, NODES)
    spec = parse_licenses("natural:10")
    usage, charged = charge(index, HresUsage(), spec, _nodes("node[01-04]")) or (None, None)
    assert usage is not None and charged is not None
    assert charged.entries == (("natural", 1, 10),)  # node[01-16] (count 100), not the top 50
    assert release(index, usage, charged).of("natural", 3) == (0, 0, 0)


def test_mode1_pools_total_250(config: ResourcesConfig) -> None:
    index = build_hres_index(config, NODES)
    usage = HresUsage()
    for _ in range(3):
        result = charge(index, usage, parse_licenses("natural:50"), _nodes("node[01-02]"))
        assert result is not None
        usage = result[0]
    assert usage.of("natural", 3) == (50, 100, 0)  # 100 on node[01-16], then the 50 on top
    assert not can_run(index, usage, parse_licenses("natural:1"), _nodes("node[01-02]"))
    assert can_run(index, usage, parse_licenses("natural:100"), _nodes("node[17-18]"))


def test_mode2_charges_every_overlapping_layer_and_filters_nodes(config: ResourcesConfig) -> None:
    index = build_hres_index(config, NODES)
    result = charge(index, HresUsage(), parse_licenses("flat:12"), _nodes("node[01-04]"))
    assert result is not None
    usage, charged = result
    assert sorted(layer for _, layer, _ in charged.entries) == [0, 1, 3]
    mask = eligible_nodes(index, usage, parse_licenses("flat:1"))
    assert not mask[:8].any() and mask[8:].all()  # node[01-08] layer is exhausted
    top = eligible_nodes(index, usage, parse_licenses("flat:13"))
    assert not top.any()  # 24 - 12 left on the top layer


def test_mode2_zero_layer_blocks_and_infinite_layer_does_nothing() -> None:
    text = """- resource: maint
  mode: MODE_2
  layers:
    - {nodes: 'n[1-4]', count: -1}
    - {nodes: 'n[1-2]', count: 0}
    - {nodes: 'n[3-4]', count: 5}
"""
    cfg = parse_resources_yaml(text)
    index = build_hres_index(cfg, ["n1", "n2", "n3", "n4"])
    assert eligible_nodes(index, HresUsage(), parse_licenses("maint:1")).tolist() == [
        False,
        False,
        True,
        True,
    ]


def test_mode1_zero_layer_has_no_effect_and_infinite_always_allows() -> None:
    text = """- resource: lic
  mode: MODE_1
  layers:
    - {nodes: 'n[1-2]', count: 0}
    - {nodes: 'n[3-4]', count: -1}
"""
    index = build_hres_index(parse_resources_yaml(text), ["n1", "n2", "n3", "n4"])
    assert eligible_nodes(index, HresUsage(), parse_licenses("lic:1000")).tolist() == [
        False,
        False,
        True,
        True,
    ]


def test_mode3_sums_per_node_usage_upwards(config: ResourcesConfig) -> None:
    index = build_hres_index(config, NODES)
    result = charge(
        index, HresUsage(), parse_licenses("power:full_node", config), _nodes("node[01-16]")
    )
    assert result is not None
    used = result[0].of("power", 7)
    assert used == (8000, 0, 8000, 0, 16000, 0, 16000)  # the hres.shtml example


def _blk1() -> tuple[TopologySet, BlockIndex]:
    blocks = tuple(BlockDef(f"b{i + 1}", tuple(NODES[i * 8 : (i + 1) * 8])) for i in range(4))
    topology = NamedTopology("blk1", BlockConfig(blocks, (8, 16, 32)), True)
    index = build_index(topology, NODES)
    assert isinstance(index, BlockIndex)
    return TopologySet((topology,)), index


def test_block_mapping_is_checked(config: ResourcesConfig) -> None:
    topologies, _ = _blk1()
    assert check_block_mapping(config, topologies) == []
    other = TopologySet((NamedTopology("blk1", BlockConfig((BlockDef("x", tuple(NODES)),))),))
    assert check_block_mapping(config, other)


def test_power_caps_base_blocks_and_steers_block_choice(config: ResourcesConfig) -> None:
    _, block = _blk1()
    index = build_hres_index(config, NODES)
    budget = layered_budget(index, HresUsage(), "power", 5000, block.nodes)
    eligible = np.ones(32, dtype=bool)
    seven = place(block, PlacementRequest(7), Availability(eligible, budget=budget))
    assert isinstance(seven, Placement)
    assert set(seven.nodes) <= set(NODES[:8])  # PDU1 powers 7 nodes: the tightest fit
    plain = place(block, PlacementRequest(7), eligible)
    assert isinstance(plain, Placement) and set(plain.nodes) <= set(NODES[24:])
    sixteen = place(block, PlacementRequest(16), Availability(eligible, budget=budget))
    assert isinstance(sixteen, Unplaceable)  # racks power 10 and 15 nodes, not 16


def test_charged_power_never_exceeds_any_layer(config: ResourcesConfig) -> None:
    _, block = _blk1()
    index = build_hres_index(config, NODES)
    usage = HresUsage()
    spec = parse_licenses("power:4000")
    for _ in range(10):
        budget = layered_budget(index, usage, "power", 4000, block.nodes)
        result = place(
            block,
            PlacementRequest(3),
            Availability(
                np.ones(32, dtype=bool),
                budget=budget,
            ),
        )
        if not isinstance(result, Placement):
            break
        charged = charge(index, usage, spec, list(result.nodes))
        assert charged is not None
        usage = charged[0]
    entry = index.resources["power"]
    assert all(u <= t for u, t in zip(usage.of("power", 7), entry.totals, strict=True))
