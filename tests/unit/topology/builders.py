"""Test fixtures that say their shape: ``block_index(bblocks=8, size=18)`` etc."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from scheduler.topology import NamedTopology, build_index
from scheduler.topology.block import BlockIndex
from scheduler.topology.config import (
    BlockConfig,
    BlockDef,
    Dims,
    RingConfig,
    RingDef,
    SwitchDef,
    Torus3dConfig,
    TorusDef,
    TorusPlacementShape,
    TreeConfig,
)
from scheduler.topology.ring import RingIndex
from scheduler.topology.torus3d import TorusIndex
from scheduler.topology.tree import TreeIndex


def names(count: int, prefix: str = "n") -> list[str]:
    """``n001 .. nNNN``."""
    return [f"{prefix}{i:03d}" for i in range(1, count + 1)]


def block_index(
    bblocks: int = 8,
    size: int = 18,
    block_sizes: tuple[int, ...] | None = (18, 36, 72, 144),
    node_count: int | None = None,
) -> BlockIndex:
    """``bblocks`` base blocks of ``size`` nodes ``n001..``, named ``b1..``."""
    all_names = names(node_count if node_count is not None else bblocks * size)
    blocks = tuple(
        BlockDef(f"b{b + 1}", tuple(all_names[b * size : (b + 1) * size])) for b in range(bblocks)
    )
    topology = NamedTopology("blk", BlockConfig(blocks, block_sizes), True)
    index = build_index(topology, all_names)
    assert isinstance(index, BlockIndex)
    return index


def tree_index(leaves: int = 4, per_leaf: int = 16, leaves_per_spine: int = 2) -> TreeIndex:
    """core → spines → ``leaves`` leaf switches of ``per_leaf`` nodes."""
    all_names = names(leaves * per_leaf)
    spines = leaves // leaves_per_spine
    switches = [SwitchDef("core", (), tuple(f"spine{s + 1}" for s in range(spines)))]
    for s in range(spines):
        children = tuple(f"leaf{s * leaves_per_spine + k + 1}" for k in range(leaves_per_spine))
        switches.append(SwitchDef(f"spine{s + 1}", (), children))
    for leaf in range(leaves):
        members = tuple(all_names[leaf * per_leaf : (leaf + 1) * per_leaf])
        switches.append(SwitchDef(f"leaf{leaf + 1}", members))
    index = build_index(NamedTopology("ib", TreeConfig(tuple(switches)), True), all_names)
    assert isinstance(index, TreeIndex)
    return index


def ring_index(rings: int = 4, size: int = 8) -> RingIndex:
    all_names = names(rings * size)
    defs = tuple(
        RingDef(f"ring{r}", tuple(all_names[r * size : (r + 1) * size])) for r in range(rings)
    )
    index = build_index(NamedTopology("rings", RingConfig(defs), True), all_names)
    assert isinstance(index, RingIndex)
    return index


def torus_index(
    dims: tuple[int, int, int] = (4, 4, 2),
    shapes: Sequence[tuple[tuple[int, int, int], tuple[int, int, int] | None]] = (
        ((2, 2, 1), None),
        ((2, 2, 2), None),
        ((4, 4, 2), None),
    ),
    toruses: int = 1,
) -> TorusIndex:
    volume = dims[0] * dims[1] * dims[2]
    all_names = names(volume * toruses)
    placements = tuple(
        TorusPlacementShape(Dims(*d), Dims(0, 0, 0), Dims(*s) if s else None) for d, s in shapes
    )
    defs = tuple(
        TorusDef(
            f"pod{t + 1}",
            Dims(*dims),
            tuple(all_names[t * volume : (t + 1) * volume]),
            (),
            placements,
        )
        for t in range(toruses)
    )
    index = build_index(NamedTopology("pod", Torus3dConfig(defs), True), all_names)
    assert isinstance(index, TorusIndex)
    return index


def mask(count: int, busy: Iterable[int] = ()) -> np.ndarray:
    """All eligible except the 0-based positions in ``busy``."""
    result = np.ones(count, dtype=bool)
    result[list(busy)] = False
    return result


def busy_range(start: int, stop: int) -> range:
    """0-based positions ``start .. stop-1``."""
    return range(start, stop)


def bblocks_of(index: BlockIndex, nodes: Iterable[str]) -> list[str]:
    """Base block names used, in block order."""
    used = sorted({int(index.node_bblock[index.nodes.position[n]]) for n in nodes})
    return [index.bblock_names[b] for b in used]
