"""topology/tree: leaf best fit, fewest switches, ``--switches=N@max-wait``."""

from __future__ import annotations

import numpy as np

from scheduler.topology import Availability, Placement, PlacementRequest, Unplaceable, place

from .builders import busy_range, mask, tree_index


def _leaves(result: Placement) -> list[str]:
    return [segment.group for segment in result.segments]


def test_a_job_that_fits_one_leaf_takes_the_tightest_leaf() -> None:
    index = tree_index()  # 4 leaves x 16 nodes
    eligible = mask(64, list(busy_range(16, 26)))  # leaf2 has 6 free
    result = place(index, PlacementRequest(5), eligible)
    assert isinstance(result, Placement)
    assert _leaves(result) == ["leaf2"]


def test_a_larger_job_uses_the_fewest_leaves_under_one_spine_when_it_can() -> None:
    index = tree_index()
    eligible = mask(64, list(busy_range(0, 8)) + list(busy_range(40, 48)))  # leaf1, leaf3: 8
    result = place(index, PlacementRequest(24), eligible)
    assert isinstance(result, Placement)
    assert len(result.segments) == 2
    assert sum(len(s.nodes) for s in result.segments) == 24


def test_closer_leaves_are_preferred_after_the_first() -> None:
    index = tree_index(leaves=4, per_leaf=8)
    eligible = mask(32, [0, 1, 2, 3])  # leaf1 keeps 4, the others 8
    result = place(index, PlacementRequest(12), eligible)
    assert isinstance(result, Placement)
    leaves = set(_leaves(result))
    assert leaves in ({"leaf1", "leaf2"}, {"leaf3", "leaf4"})  # one spine, two hops apart


def test_node_range_takes_up_to_nodes_max() -> None:
    index = tree_index()
    result = place(index, PlacementRequest(4, nodes_max=20), mask(64))
    assert isinstance(result, Placement) and len(result.nodes) == 20
    partial = place(index, PlacementRequest(4, nodes_max=20), mask(64, busy_range(10, 64)))
    assert isinstance(partial, Placement) and len(partial.nodes) == 10


def test_switches_wait_keeps_the_job_pending_until_the_wait_is_over() -> None:
    index = tree_index()
    eligible = mask(64, [leaf * 16 + k for leaf in range(4) for k in range(8)])  # 8 free each
    waiting = place(index, PlacementRequest(12, switches=1, waited_s=10), eligible)
    assert isinstance(waiting, Unplaceable)
    assert waiting.reason == "Resources" and waiting.retryable
    later = place(index, PlacementRequest(12, switches=1, waited_s=300), eligible)
    assert isinstance(later, Placement) and len(later.segments) == 2


def test_switches_lowers_the_node_count_within_the_range() -> None:
    index = tree_index()
    eligible = mask(64, list(busy_range(0, 6)))  # leaf1 has 10, the others 16
    result = place(index, PlacementRequest(8, nodes_max=20, switches=1, waited_s=0), eligible)
    assert isinstance(result, Placement)
    assert len(result.segments) == 1 and len(result.nodes) == 16


def test_required_nodes_must_share_the_tree() -> None:
    index = tree_index()
    result = place(index, PlacementRequest(3, required_nodes=("n001", "n064")), mask(64))
    assert isinstance(result, Placement)
    assert {"n001", "n064"} <= set(result.nodes)
    busy = place(index, PlacementRequest(3, required_nodes=("n001",)), mask(64, [0]))
    assert isinstance(busy, Unplaceable) and busy.reason == "ReqNodeNotAvail"


def test_exclusive_topo_is_not_supported_by_tree() -> None:
    result = place(tree_index(), PlacementRequest(2, exclusive_topo=True), mask(64))
    assert isinstance(result, Unplaceable) and result.reason == "BadConstraints"


def test_too_few_nodes_is_retryable_resources() -> None:
    result = place(tree_index(), PlacementRequest(40), mask(64, busy_range(0, 30)))
    assert isinstance(result, Unplaceable) and result.retryable


def test_fragmentation_aware_tie_break_prefers_the_partly_used_spine() -> None:
    index = tree_index(leaves=4, per_leaf=8)
    busy = np.zeros(32, dtype=bool)
    busy[0:8] = True  # leaf1 fully used: spine1 is no longer whole
    slurm = place(index, PlacementRequest(8), Availability(~busy, busy=busy))
    aware = place(
        index, PlacementRequest(8, fragmentation_aware=True), Availability(~busy, busy=busy)
    )
    assert isinstance(slurm, Placement) and isinstance(aware, Placement)
    assert _leaves(aware) == ["leaf2"]
