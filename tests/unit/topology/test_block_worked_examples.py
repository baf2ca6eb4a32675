"""Slurm §1.7 worked examples: bblocks of 18 nodes, ``BlockSizes=18,36,72,144``, 8 bblocks
(and the topology.conf example with blocks of 32 nodes and ``BlockSizes=30,120``)."""

from __future__ import annotations

import pytest

from scheduler.topology import Placement, PlacementRequest, Unplaceable, place
from scheduler.topology.block import block_level_for
from scheduler.topology.block.geometry import geometry

from .builders import bblocks_of, block_index, busy_range, mask


@pytest.mark.parametrize(
    ("nodes", "level", "ll_level", "max_llblock"),
    [
        (12, 0, 0, 1),  # best-fit single bblock
        (40, 2, 1, 2),  # one 72-node block, at most two 36-node pairs
        (144, 3, 2, 2),  # the whole machine
        (200, -1, 3, 2),  # level 4 not enabled: whole topology, at most 2 level-3 blocks
    ],
)
def test_block_level_table(nodes: int, level: int, ll_level: int, max_llblock: int) -> None:
    index = block_index()
    assert block_level_for(index, nodes) == (level, ll_level)
    assert geometry(index, nodes).max_llblock == max_llblock


def test_n12_takes_the_best_fitting_single_bblock() -> None:
    index = block_index()
    eligible = mask(144, busy_range(36, 41))  # b3 has 13 free nodes, the rest 18
    result = place(index, PlacementRequest(12), eligible)
    assert isinstance(result, Placement)
    assert bblocks_of(index, result.nodes) == ["b3"]


def test_n12_ties_go_to_the_later_bblock() -> None:
    index = block_index()
    result = place(index, PlacementRequest(12), mask(144))
    assert isinstance(result, Placement)
    assert bblocks_of(index, result.nodes) == ["b8"]
    assert result.nodes == tuple(f"n{i:03d}" for i in range(127, 139))


def test_n40_fits_one_72_node_block_using_at_most_two_pairs() -> None:
    index = block_index()
    eligible = mask(144, busy_range(72, 84))  # block b[5-8] has 60 free, b[1-4] has 72
    result = place(index, PlacementRequest(40), eligible)
    assert isinstance(result, Placement)
    used = bblocks_of(index, result.nodes)
    assert set(used) <= {"b5", "b6", "b7", "b8"}  # best fit: the block with fewer free nodes
    pairs = {int(name[1:]) // 2 for name in used if name}
    assert len({(int(n[1:]) - 1) // 2 for n in used}) <= 2
    assert len(result.nodes) == 40 and pairs


def test_n40_is_unplaceable_when_no_two_pairs_of_one_block_hold_it() -> None:
    index = block_index()
    # every pair keeps 19 free nodes: 4 pairs x 19 = 76 >= 40, but two pairs hold only 38
    busy = [p * 36 + k for p in range(4) for k in range(17)]
    result = place(index, PlacementRequest(40), mask(144, busy))
    assert isinstance(result, Unplaceable)
    assert result.reason == "Resources" and result.retryable


def test_n144_takes_the_whole_machine() -> None:
    index = block_index()
    result = place(index, PlacementRequest(144), mask(144))
    assert isinstance(result, Placement)
    assert len(result.nodes) == 144
    assert result.segments[0].group == "b[1-8]"


def _free_first(index_nodes: int, per_bblock: list[int], bblocks: int = 24) -> list[int]:
    """Busy positions so that bblock ``b`` keeps its first ``per_bblock[b % 8]`` nodes free."""
    return [b * 18 + k for b in range(bblocks) for k in range(per_bblock[b % 8], 18)]


def test_n200_spans_at_most_two_level3_blocks() -> None:
    index = block_index(bblocks=24)  # 432 nodes, three level-3 blocks of 144
    hundred = [13, 13, 13, 13, 12, 12, 12, 12]  # 100 free nodes per level-3 block
    enough = place(index, PlacementRequest(200), mask(432, _free_first(432, hundred)))
    assert isinstance(enough, Placement)
    assert len({(int(n[1:]) - 1) // 144 for n in enough.nodes}) == 2
    ninety_six = [12] * 8  # 288 free, but any two level-3 blocks hold only 192
    result = place(index, PlacementRequest(200), mask(432, _free_first(432, ninety_six)))
    assert isinstance(result, Unplaceable)


def test_slurm_quirk_an_empty_bblock_in_a_used_llblock_stalls_the_greedy_loop() -> None:
    """Reproduced on purpose: step C prefers base blocks in a lower-level block already
    used, even with no free node, so Slurm stalls there and reports insufficient
    resources although two other level-3 blocks could complete the job."""
    index = block_index(bblocks=24)
    with_gaps = [18, 18, 18, 18, 18, 10, 0, 0]  # 100 free, the last two bblocks full
    result = place(index, PlacementRequest(200), mask(432, _free_first(432, with_gaps)))
    assert isinstance(result, Unplaceable)
    assert result.code == "ESLURM_TOPO_INSUFFICIENT_RESOURCES"


def test_n36_segment9_puts_each_segment_in_one_bblock() -> None:
    index = block_index()
    result = place(index, PlacementRequest(36, segment=9), mask(144))
    assert isinstance(result, Placement)
    assert len(result.segments) == 4
    for segment in result.segments:
        assert len(segment.nodes) == 9
        assert len(bblocks_of(index, segment.nodes)) == 1
    assert [s.group for s in result.segments] == ["b8", "b8", "b7", "b7"]


def test_n36_segment9_spread_uses_four_distinct_bblocks() -> None:
    index = block_index()
    result = place(index, PlacementRequest(36, segment=9, spread_segments=True), mask(144))
    assert isinstance(result, Placement)
    groups = [s.group for s in result.segments]
    assert len(set(groups)) == 4


def test_n36_segment9_consolidate_stays_in_one_36_node_block() -> None:
    index = block_index()
    result = place(index, PlacementRequest(36, segment=9, consolidate_segments=True), mask(144))
    assert isinstance(result, Placement)
    used = bblocks_of(index, result.nodes)
    assert len(used) == 2 and len({(int(b[1:]) - 1) // 2 for b in used}) == 1


def test_n36_segment9_consolidate_and_spread_uses_four_bblocks_of_one_72_block() -> None:
    index = block_index()
    request = PlacementRequest(36, segment=9, consolidate_segments=True, spread_segments=True)
    result = place(index, request, mask(144))
    assert isinstance(result, Placement)
    used = bblocks_of(index, result.nodes)
    assert len(used) == 4 and len({(int(b[1:]) - 1) // 4 for b in used}) == 1


def test_n30_segment9_is_rejected_because_9_does_not_divide_30() -> None:
    result = place(block_index(), PlacementRequest(30, segment=9), mask(144))
    assert isinstance(result, Unplaceable)
    assert result.reason == "BadConstraints"
    assert not result.retryable
    assert result.code == "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE"


def test_topology_conf_example_plans_with_30_but_places_on_32_node_blocks() -> None:
    index = block_index(bblocks=4, size=32, block_sizes=(30, 120))
    assert geometry(index, 60).max_llblock == 2  # a 60-node job may span 2 bblocks
    assert geometry(index, 64).max_llblock == 3  # a 64-node job may span 3
    fits = place(index, PlacementRequest(60), mask(128))
    assert isinstance(fits, Placement) and len(bblocks_of(index, fits.nodes)) == 2
    # 29 free per block: 116 free, but two blocks hold only 58 < 60
    busy = [b * 32 + k for b in range(4) for k in range(3)]
    result = place(index, PlacementRequest(60), mask(128, busy))
    assert isinstance(result, Unplaceable)
    assert isinstance(place(index, PlacementRequest(64), mask(128, busy)), Placement)
