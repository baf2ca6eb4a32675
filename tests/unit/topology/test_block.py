"""topology/block rules beyond the worked examples."""

from __future__ import annotations

import dataclasses

import numpy as np

from scheduler.topology import (
    Availability,
    LayeredBudget,
    NamedTopology,
    Placement,
    PlacementRequest,
    Unplaceable,
    aggregated_blocks,
    build_index,
    place,
)
from scheduler.topology.block import BlockIndex
from scheduler.topology.config import BlockConfig, BlockDef

from .builders import bblocks_of, block_index, busy_range, mask, names


def test_exclusive_topo_gets_only_entirely_free_bblocks_and_blocks_the_rest() -> None:
    index = block_index()
    busy = mask(144, []) & False
    busy[[130, 112]] = True  # one busy node in b8 and in b7
    availability = Availability(eligible=~busy, busy=busy)
    result = place(index, PlacementRequest(10, exclusive_topo=True), availability)
    assert isinstance(result, Placement)
    assert bblocks_of(index, result.nodes) == ["b6"]
    assert len(result.blocked_nodes) == 8
    assert set(result.blocked_nodes) | set(result.nodes) == set(names(108)[90:108])


def test_without_busy_every_ineligible_node_counts_as_busy_for_exclusive_jobs() -> None:
    index = block_index()
    result = place(index, PlacementRequest(10, exclusive_topo=True), mask(144, [143]))
    assert isinstance(result, Placement)
    assert bblocks_of(index, result.nodes) == ["b7"]


def test_running_topo_exclusive_jobs_close_their_bblocks_to_every_job() -> None:
    index = block_index()
    held = np.zeros(144, dtype=bool)
    held[126:131] = True  # a topo-exclusive job on b8 (5 nodes, 13 BLOCKED are also free)
    availability = Availability(eligible=~held, exclusive_busy=held)
    result = place(index, PlacementRequest(13), availability)
    assert isinstance(result, Placement)
    assert "b8" not in bblocks_of(index, result.nodes)


def test_exclusive_topo_segments_take_whole_bblocks() -> None:
    index = block_index()
    request = PlacementRequest(36, segment=9, exclusive_topo=True)
    result = place(index, request, mask(144))
    assert isinstance(result, Placement)
    used = bblocks_of(index, result.nodes)
    assert len(used) == 2
    assert len(result.blocked_nodes) == 0  # two segments fill each 18-node bblock


def test_lighter_nodes_are_used_first_and_override_topology() -> None:
    index = block_index()
    weights = dict.fromkeys(names(144), 10)
    weights.update({"n001": 1, "n002": 1})  # two light nodes in b1
    light = dataclasses.replace(index, nodes=index.nodes.with_weights(weights))
    result = place(light, PlacementRequest(4), mask(144))
    assert isinstance(result, Placement)
    assert {"n001", "n002"} <= set(result.nodes)
    assert bblocks_of(light, result.nodes) == ["b1"]


def test_required_nodes_must_share_a_block_at_the_job_level() -> None:
    index = block_index()
    inside = place(index, PlacementRequest(4, required_nodes=("n020",)), mask(144))
    assert isinstance(inside, Placement)
    assert "n020" in inside.nodes and bblocks_of(index, inside.nodes) == ["b2"]
    apart = place(index, PlacementRequest(4, required_nodes=("n001", "n020")), mask(144))
    assert isinstance(apart, Unplaceable) and apart.reason == "BadConstraints"
    busy = place(index, PlacementRequest(4, required_nodes=("n001",)), mask(144, [0]))
    assert isinstance(busy, Unplaceable) and busy.reason == "ReqNodeNotAvail"
    unknown = place(index, PlacementRequest(4, required_nodes=("zz9",)), mask(144))
    assert isinstance(unknown, Unplaceable) and not unknown.retryable


def test_node_range_uses_nodes_min_without_topo_max_size_unroll() -> None:
    index = block_index()
    result = place(index, PlacementRequest(10, nodes_max=20), mask(144))
    assert isinstance(result, Placement) and len(result.nodes) == 10


def test_topo_max_size_unroll_tries_the_largest_size_first() -> None:
    index = dataclasses.replace(block_index(), max_size_unroll=16)
    result = place(index, PlacementRequest(10, nodes_max=20), mask(144))
    assert isinstance(result, Placement) and len(result.nodes) == 20
    few = place(index, PlacementRequest(10, nodes_max=20), mask(144, busy_range(12, 144)))
    assert isinstance(few, Placement) and len(few.nodes) == 12
    wide = place(index, PlacementRequest(1, nodes_max=40), mask(144))
    assert isinstance(wide, Unplaceable) and wide.code == "ESLURM_INVALID_NODE_COUNT"


def test_nodes_outside_every_block_are_never_used() -> None:
    index = block_index(bblocks=2, size=4, block_sizes=(4, 8), node_count=10)
    result = place(index, PlacementRequest(8), mask(10))
    assert isinstance(result, Placement)
    assert "n009" not in result.nodes and "n010" not in result.nodes
    assert isinstance(place(index, PlacementRequest(9), mask(10)), Unplaceable)


def test_empty_blocks_are_gaps_that_keep_later_blocks_aligned() -> None:
    all_names = names(8)
    blocks = (
        BlockDef("b1", tuple(all_names[:4])),
        BlockDef("gap", ()),
        BlockDef("b3", tuple(all_names[4:])),
    )
    index = build_index(NamedTopology("g", BlockConfig(blocks, (4, 8, 16))), all_names)
    assert isinstance(index, BlockIndex)
    assert isinstance(place(index, PlacementRequest(4), mask(8)), Placement)
    apart = place(index, PlacementRequest(8), mask(8))
    assert isinstance(apart, Unplaceable)  # pairs (b1, gap) and (b3) hold 4 each
    no_gap = build_index(NamedTopology("g", BlockConfig((blocks[0], blocks[2]), (4, 8))), all_names)
    assert isinstance(place(no_gap, PlacementRequest(8), mask(8)), Placement)


def test_aggregated_blocks_are_named_with_block_hostlists() -> None:
    blocks = aggregated_blocks(block_index())
    assert [b.name for b in blocks][:4] == ["b[1-2]", "b[3-4]", "b[5-6]", "b[7-8]"]
    assert blocks[-1].name == "b[1-8]" and blocks[-1].size == 144


def _power_budget(
    index: BlockIndex, per_node: int, per_rack: list[int], total: int
) -> LayeredBudget:
    """One leaf layer per base block (the racks), one root."""
    leaves = len(per_rack)
    node_leaf = np.where(index.node_bblock >= 0, index.node_bblock, -1).astype(np.int32)
    paths = np.asarray([[leaf, leaves] for leaf in range(leaves)], dtype=np.int32)
    available = np.asarray([*per_rack, total], dtype=np.int64)
    return LayeredBudget(per_node, node_leaf, paths, available, topology=index.name)


def test_power_budget_caps_how_many_nodes_of_a_bblock_are_usable() -> None:
    index = block_index()
    racks = [18_000] * 7 + [5_000]  # b8 can power only 5 nodes at 1 kW
    budget = _power_budget(index, 1_000, racks, 1_000_000)
    result = place(index, PlacementRequest(12), Availability(mask(144), budget=budget))
    assert isinstance(result, Placement)
    assert bblocks_of(index, result.nodes) == ["b7"]
    small = place(index, PlacementRequest(5), Availability(mask(144), budget=budget))
    assert isinstance(small, Placement) and bblocks_of(index, small.nodes) == ["b8"]


def test_power_budget_at_the_root_limits_the_whole_job() -> None:
    index = block_index()
    budget = _power_budget(index, 1_000, [18_000] * 8, 30_000)
    assert isinstance(
        place(index, PlacementRequest(30), Availability(mask(144), budget=budget)), Placement
    )
    result = place(index, PlacementRequest(31), Availability(mask(144), budget=budget))
    assert isinstance(result, Unplaceable)


def test_fragmentation_aware_tie_break_keeps_whole_free_blocks() -> None:
    index = block_index()
    busy = np.zeros(144, dtype=bool)
    busy[0:18] = True  # b1 fully used: pair b[1-2] and quad b[1-4] are already broken
    slurm = place(index, PlacementRequest(18), Availability(~busy, busy=busy))
    aware = place(
        index, PlacementRequest(18, fragmentation_aware=True), Availability(~busy, busy=busy)
    )
    assert isinstance(slurm, Placement) and isinstance(aware, Placement)
    assert bblocks_of(index, slurm.nodes) == ["b8"]  # Slurm: ties to the later block
    assert bblocks_of(index, aware.nodes) == ["b2"]  # keeps b[5-8] and b[7-8] whole


def test_placement_reports_rank_order_and_indices() -> None:
    index = block_index()
    result = place(index, PlacementRequest(20), mask(144))
    assert isinstance(result, Placement)
    assert list(result.indices) == [index.nodes.position[n] for n in result.nodes]
    assert result.topology == "blk"
