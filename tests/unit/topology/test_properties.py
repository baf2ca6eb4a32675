"""Properties that hold for any topology, availability and request (hypothesis)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.topology import (
    REGISTRY,
    Availability,
    LayeredBudget,
    NamedTopology,
    Placement,
    PlacementRequest,
    TopologyIndex,
    build_index,
)
from scheduler.topology.block import BlockIndex
from scheduler.topology.config import (
    BlockConfig,
    BlockDef,
    Dims,
    FlatConfig,
    KindConfig,
    RingConfig,
    RingDef,
    SwitchDef,
    Torus3dConfig,
    TorusDef,
    TorusPlacementShape,
    TreeConfig,
)

from .builders import names

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Scene:
    index: TopologyIndex
    eligible: np.ndarray
    busy: np.ndarray


@st.composite
def block_topologies(draw: st.DrawFn) -> BlockIndex:
    base = draw(st.integers(2, 6))
    counts = draw(st.lists(st.integers(0, base + 2), min_size=1, max_size=10))
    if counts[0] == 0:
        counts[0] = base
    all_names = names(sum(counts) + draw(st.integers(0, 3)))
    blocks, start = [], 0
    for number, count in enumerate(counts):
        blocks.append(BlockDef(f"b{number + 1}", tuple(all_names[start : start + count])))
        start += count
    levels = draw(st.lists(st.integers(1, 4), max_size=3, unique=True))
    sizes = (base, *(base << level for level in sorted(levels)))
    index = build_index(NamedTopology("blk", BlockConfig(tuple(blocks), sizes)), all_names)
    assert isinstance(index, BlockIndex)
    return index


def _masks(draw: st.DrawFn, size: int) -> tuple[np.ndarray, np.ndarray]:
    busy = np.asarray(draw(st.lists(st.booleans(), min_size=size, max_size=size)), dtype=bool)
    down = np.asarray(draw(st.lists(st.booleans(), min_size=size, max_size=size)), dtype=bool)
    return ~busy & ~(down & busy.any()), busy


@st.composite
def block_scenes(draw: st.DrawFn) -> Scene:
    index = draw(block_topologies())
    eligible, busy = _masks(draw, index.nodes.size)
    return Scene(index, eligible, busy)


@st.composite
def block_requests(draw: st.DrawFn, index: BlockIndex) -> PlacementRequest:
    total = max(1, int(index.covered.sum()))
    segment = draw(st.none() | st.integers(1, index.bblock_node_cnt))
    count = draw(st.integers(1, 4)) if segment else 1
    nodes = (segment or draw(st.integers(1, total))) * count
    return PlacementRequest(
        nodes_min=nodes,
        segment=segment,
        spread_segments=draw(st.booleans()),
        consolidate_segments=draw(st.booleans()),
        exclusive_topo=draw(st.booleans()),
        fragmentation_aware=draw(st.booleans()),
    )


def _bblocks(index: BlockIndex, nodes: tuple[str, ...]) -> set[int]:
    return {int(index.node_bblock[index.nodes.position[n]]) for n in nodes}


@SETTINGS
@given(st.data())
def test_block_placement_never_uses_an_ineligible_node_and_segments_stay_in_one_bblock(
    data: st.DataObject,
) -> None:
    scene = data.draw(block_scenes())
    index = scene.index
    assert isinstance(index, BlockIndex)
    request = data.draw(block_requests(index))
    result = REGISTRY["block"].place(index, request, Availability(scene.eligible, busy=scene.busy))
    if not isinstance(result, Placement):
        return
    positions = [index.nodes.position[n] for n in result.nodes]
    assert scene.eligible[positions].all()
    assert len(set(result.nodes)) == len(result.nodes) == request.nodes_min
    for segment in result.segments:
        if request.segment is not None and len(result.segments) > 1:
            assert len(segment.nodes) == request.segment
            assert len(_bblocks(index, segment.nodes)) == 1
    if request.spread_segments and len(result.segments) > 1:
        seen: set[int] = set()
        for segment in result.segments:
            used = _bblocks(index, segment.nodes)
            assert not used & seen
            seen |= used


@SETTINGS
@given(st.data())
def test_a_topo_exclusive_job_never_shares_a_base_block(data: st.DataObject) -> None:
    scene = data.draw(block_scenes())
    index = scene.index
    assert isinstance(index, BlockIndex)
    request = data.draw(block_requests(index))
    exclusive = PlacementRequest(request.nodes_min, segment=request.segment, exclusive_topo=True)
    first = REGISTRY["block"].place(index, exclusive, Availability(scene.eligible, busy=scene.busy))
    if not isinstance(first, Placement):
        return
    mine = _bblocks(index, first.nodes)
    for bblock in mine:
        assert not scene.busy[index.bblock_nodes[bblock]].any()
    assert _bblocks(index, first.blocked_nodes) <= mine
    held = index.nodes.mask(first.nodes + first.blocked_nodes)
    other = data.draw(block_requests(index))
    second = REGISTRY["block"].place(
        index,
        other,
        Availability(scene.eligible & ~held, busy=scene.busy | held, exclusive_busy=held),
    )
    if isinstance(second, Placement):
        assert not _bblocks(index, second.nodes) & mine


@st.composite
def any_scene(draw: st.DrawFn) -> tuple[Scene, PlacementRequest]:
    kind = draw(st.sampled_from(list(REGISTRY)))
    all_names = names(16)
    config: KindConfig
    if kind == "flat":
        config = FlatConfig()
    elif kind == "tree":
        leaves = [SwitchDef(f"l{i}", tuple(all_names[i * 4 : i * 4 + 4])) for i in range(4)]
        config = TreeConfig(
            (
                SwitchDef("s0", (), ("l0", "l1")),
                SwitchDef("s1", (), ("l2", "l3")),
                SwitchDef("top", (), ("s0", "s1")),
                *leaves,
            )
        )
    elif kind == "block":
        config = BlockConfig(
            tuple(BlockDef(f"b{i}", tuple(all_names[i * 4 : i * 4 + 4])) for i in range(4)),
            (4, 8, 16),
        )
    elif kind == "ring":
        config = RingConfig(
            tuple(RingDef(f"r{i}", tuple(all_names[i * 8 : i * 8 + 8])) for i in range(2))
        )
    else:
        shapes = (
            TorusPlacementShape(Dims(1, 1, 1)),
            TorusPlacementShape(Dims(2, 1, 1)),
            TorusPlacementShape(Dims(2, 2, 1), Dims(0, 0, 0), Dims(1, 1, 1)),
        )
        config = Torus3dConfig((TorusDef("t", Dims(4, 2, 2), tuple(all_names), (), shapes),))
    index = build_index(NamedTopology(kind, config), all_names)
    eligible, busy = _masks(draw, 16)
    nodes = draw(st.sampled_from([1, 2, 4]) if kind == "torus3d" else st.integers(1, 16))
    segment = draw(st.none() | st.sampled_from([1, 2, 4]))
    return Scene(index, eligible, busy), PlacementRequest(nodes, segment=segment)


@st.composite
def budgets(draw: st.DrawFn, size: int) -> LayeredBudget:
    """Four racks of four nodes under one root; some nodes under no rack."""
    per_node = draw(st.integers(1, 5))
    racks = draw(st.lists(st.integers(0, 25), min_size=4, max_size=4))
    root = draw(st.integers(0, 80))
    leaf = np.arange(size, dtype=np.int32) // 4
    leaf[draw(st.lists(st.integers(0, size - 1), max_size=2))] = -1
    paths = np.asarray([[r, 4] for r in range(4)], dtype=np.int32)
    return LayeredBudget(
        per_node,
        leaf,
        paths,
        np.asarray([*racks, root], dtype=np.int64),
        topology=draw(st.sampled_from([None, "block"])),
    )


@SETTINGS
@given(st.data())
def test_power_budgets_are_never_exceeded(data: st.DataObject) -> None:
    scene, request = data.draw(any_scene())
    budget = data.draw(budgets(16))
    result = REGISTRY[scene.index.kind].place(
        scene.index, request, Availability(scene.eligible, budget=budget)
    )
    if not isinstance(result, Placement):
        return
    used = np.zeros(5, dtype=np.int64)
    for position in result.indices:
        leaf = int(budget.node_leaf[position])
        assert leaf >= 0
        used[budget.paths[leaf]] += budget.per_node
    assert (used <= budget.available).all()


@SETTINGS
@given(st.data())
def test_every_plugin_uses_only_eligible_nodes_and_is_deterministic(data: st.DataObject) -> None:
    scene, request = data.draw(any_scene())
    plugin = REGISTRY[scene.index.kind]
    before = scene.eligible.copy()
    first = plugin.place(scene.index, request, scene.eligible)
    second = plugin.place(scene.index, request, scene.eligible.copy())
    assert first == second
    assert (scene.eligible == before).all()
    if isinstance(first, Placement):
        assert scene.eligible[list(first.indices)].all()
        assert len(set(first.indices)) == len(first.indices)
        assert request.nodes_min <= len(first.nodes) <= request.max_nodes
