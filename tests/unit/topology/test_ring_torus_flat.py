"""topology/ring, topology/torus3d (26.05 semantics) and topology/flat."""

from __future__ import annotations

import dataclasses

import numpy as np

from scheduler.topology import Availability, Placement, PlacementRequest, Unplaceable, place
from scheduler.topology.config import FlatConfig
from scheduler.topology.registry import build_index
from scheduler.topology.ring.evaluate import Window, _Heap

from .builders import busy_range, mask, names, ring_index, torus_index

# --- ring -------------------------------------------------------------------------------


def test_ring_window_is_consecutive_and_may_wrap() -> None:
    index = ring_index(rings=1, size=8)
    eligible = mask(8, [2, 3, 4])  # free positions 5,6,7,0,1
    result = place(index, PlacementRequest(4), eligible)
    assert isinstance(result, Placement)
    assert result.nodes == ("n006", "n007", "n008", "n001")  # ring order, wrapping


def test_ring_prefers_the_ring_with_fewer_idle_nodes() -> None:
    index = ring_index(rings=3, size=8)
    eligible = mask(24, [8, 9, 10])  # ring1 has 5 idle nodes, the others 8
    result = place(index, PlacementRequest(4), eligible)
    assert isinstance(result, Placement)
    assert result.segments[0].group == "ring1"


def test_ring_prefers_the_lightest_window() -> None:
    index = ring_index(rings=1, size=8)
    heavy = dict.fromkeys(names(8), 5)
    heavy.update({"n005": 1, "n006": 1, "n007": 1})
    light = dataclasses.replace(index, nodes=index.nodes.with_weights(heavy))
    result = place(light, PlacementRequest(3), mask(8))
    assert isinstance(result, Placement)
    assert result.nodes == ("n005", "n006", "n007")


def test_ring_puts_at_most_one_segment_per_ring() -> None:
    index = ring_index(rings=3, size=8)
    result = place(index, PlacementRequest(12, segment=4), mask(24))
    assert isinstance(result, Placement)
    assert [s.group for s in result.segments] == ["ring0", "ring1", "ring2"]
    too_many = place(index, PlacementRequest(16, segment=4), mask(24))
    assert isinstance(too_many, Unplaceable) and too_many.reason == "BadConstraints"
    bad_split = place(index, PlacementRequest(10, segment=4), mask(24))
    assert isinstance(bad_split, Unplaceable) and not bad_split.retryable


def test_ring_exclusive_topo_blocks_the_rest_of_the_ring() -> None:
    index = ring_index(rings=2, size=8)
    busy = np.zeros(16, dtype=bool)
    busy[0] = True
    result = place(index, PlacementRequest(3, exclusive_topo=True), Availability(~busy, busy=busy))
    assert isinstance(result, Placement)
    assert result.segments[0].group == "ring1"
    assert len(result.blocked_nodes) == 5


def test_ring_heap_evicts_like_slurms_heap_on_ties() -> None:
    heap = _Heap(2)
    for window in (Window(0, 5, 0, 0), Window(0, 5, 1, 0), Window(0, 3, 2, 0)):
        heap.push(window)
    assert sorted(w.ring for w in heap.items) == [1, 2]  # ring0 sat at the root


# --- torus3d ----------------------------------------------------------------------------


def test_torus_job_size_must_match_a_placement_exactly() -> None:
    index = torus_index()
    result = place(index, PlacementRequest(5), mask(32))
    assert isinstance(result, Unplaceable)
    assert result.reason == "BadConstraints" and "4, 8, 32" in result.detail


def test_torus_places_a_sub_cube() -> None:
    index = torus_index()
    result = place(index, PlacementRequest(8), mask(32))
    assert isinstance(result, Placement)
    coordinates = {((i := int(n[1:]) - 1) % 4, (i // 4) % 4, i // 16) for n in result.nodes}
    xs, ys, zs = zip(*coordinates, strict=True)
    assert len(set(xs)) == 2 and len(set(ys)) == 2 and len(set(zs)) == 2


def test_torus_placements_wrap_around_the_edges() -> None:
    index = torus_index(dims=(4, 1, 1), shapes=[((2, 1, 1), (1, 1, 1))])
    result = place(index, PlacementRequest(2), mask(4, [1, 2]))
    assert isinstance(result, Placement)
    assert set(result.nodes) == {"n004", "n001"}


def test_torus_prefers_the_placement_that_breaks_fewest_larger_anchors() -> None:
    index = torus_index()  # 2x2x1 anchors tile each z layer in four quadrants
    busy = [0]  # one node of the first 2x2x2 sub-cube is busy
    result = place(index, PlacementRequest(4), mask(32, busy))
    assert isinstance(result, Placement)
    # every other 2x2x1 anchor would break a fully free 2x2x2 anchor; (0,0,1) only touches
    # the 2x2x2 cube that node (0,0,0) already broke
    first_cube = {0, 1, 4, 5, 16, 17, 20, 21}
    assert {int(n[1:]) - 1 for n in result.nodes} <= first_cube


def test_torus_segments_take_separate_placements() -> None:
    index = torus_index(toruses=2)
    result = place(index, PlacementRequest(16, segment=8), mask(64))
    assert isinstance(result, Placement)
    assert len(result.segments) == 2
    assert not set(result.segments[0].nodes) & set(result.segments[1].nodes)


def test_torus_does_not_support_exclusive_topo() -> None:
    result = place(torus_index(), PlacementRequest(4, exclusive_topo=True), mask(32))
    assert isinstance(result, Unplaceable) and result.reason == "BadConstraints"


def test_torus_full_is_retryable() -> None:
    result = place(torus_index(), PlacementRequest(32), mask(32, [3]))
    assert isinstance(result, Unplaceable) and result.retryable


# --- flat -------------------------------------------------------------------------------


def _flat(count: int, alpha: bool = False) -> object:
    from scheduler.topology import NamedTopology

    return build_index(NamedTopology("plain", FlatConfig(alpha)), names(count))


def test_flat_takes_the_first_eligible_nodes_in_order() -> None:
    index = _flat(10)
    result = place(index, PlacementRequest(3), mask(10, [0, 2]))  # type: ignore[arg-type]
    assert isinstance(result, Placement)
    assert result.nodes == ("n002", "n004", "n005")
    assert result.segments[0].group == ""


def test_flat_takes_up_to_nodes_max_and_at_least_nodes_min() -> None:
    index = _flat(10)
    result = place(index, PlacementRequest(2, nodes_max=6), mask(10, busy_range(5, 10)))  # type: ignore[arg-type]
    assert isinstance(result, Placement) and len(result.nodes) == 5
    short = place(index, PlacementRequest(6), mask(10, busy_range(5, 10)))  # type: ignore[arg-type]
    assert isinstance(short, Unplaceable) and short.retryable


def test_flat_alpha_step_rank_orders_by_name() -> None:
    from scheduler.topology import NamedTopology

    index = build_index(NamedTopology("p", FlatConfig(True)), ["n10", "n9", "n1"])
    result = place(index, PlacementRequest(3), mask(3))
    assert isinstance(result, Placement)
    assert result.nodes == ("n1", "n9", "n10")
