"""topology/block records: base blocks in file order, the planning size, the enabled levels.

Slurm's ``block_record.c``. A block topology is a complete binary-aligned hierarchy over the
ordered list of base blocks (bblocks): the level-``k`` block holding bblock ``i`` is
``i >> k``. Only the enabled levels (``BlockSizes``) are places a job is fitted to.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.block.config import block_levels_from_sizes
from scheduler.topology.common.nodes import NodeTable
from scheduler.topology.config.model import BlockConfig, NamedTopology
from scheduler.topology.errors import TopologyConfigError
from scheduler.topology.hostlist import compress

__all__ = [
    "DEFAULT_BLOCK_LEVELS",
    "AggregatedBlock",
    "BlockIndex",
    "aggregated_blocks",
    "block_level_for",
    "build_block_index",
]

DEFAULT_BLOCK_LEVELS = (0, 1, 2, 3, 4)
"""Levels when BlockSizes is not set: aggregates of 1, 2, 4, 8 and 16 base blocks."""


@dataclass(frozen=True, slots=True, eq=False)
class BlockIndex:
    """An immutable block topology over the cluster's nodes.

    ``node_bblock[i]`` is node ``i``'s base block (-1: in no block, never placed on);
    ``bblock_nodes[b]`` its nodes in node order; ``bblock_node_cnt`` the planning size
    (first BlockSizes value, or the first block's node count); ``levels`` the enabled
    levels, ascending, 0 first. ``max_size_unroll`` is ``TopologyParam=TopoMaxSizeUnroll``.
    """

    name: str
    nodes: NodeTable
    bblock_names: tuple[str, ...]
    node_bblock: NDArray[np.int32]
    bblock_nodes: tuple[NDArray[np.intp], ...]
    bblock_node_cnt: int
    levels: tuple[int, ...]
    max_size_unroll: int = 0
    kind: ClassVar[str] = "block"

    @property
    def bblock_count(self) -> int:
        """Number of base blocks (gaps included)."""
        return len(self.bblock_names)

    @property
    def covered(self) -> NDArray[np.bool_]:
        """Nodes that belong to a base block."""
        return self.node_bblock >= 0


def build_block_index(config: NamedTopology, node_names: Sequence[str]) -> BlockIndex:
    """Pure. Nodes named in the file but absent from ``node_names`` are left out (Slurm
    warns about them; parse with ``known_nodes`` to make them errors)."""
    block = config.config
    if not isinstance(block, BlockConfig):
        raise TypeError(f"topology {config.name!r} is {config.kind}, not block")
    table = NodeTable.of(node_names)
    node_bblock = np.full(table.size, -1, dtype=np.int32)
    members: list[NDArray[np.intp]] = []
    for number, definition in enumerate(block.blocks):
        positions = sorted(table.position[n] for n in definition.nodes if n in table.position)
        node_bblock[positions] = number
        members.append(np.asarray(positions, dtype=np.intp))
    if block.block_sizes is not None:
        base, levels = block_levels_from_sizes(block.block_sizes, "topology", block.line)
    else:
        base, levels = len(block.blocks[0].nodes), DEFAULT_BLOCK_LEVELS
    if base < 1:
        raise TopologyConfigError("topology", block.line, "the planning block size is 0")
    node_bblock.flags.writeable = False
    for array in members:
        array.flags.writeable = False
    return BlockIndex(
        config.name,
        table,
        tuple(b.name for b in block.blocks),
        node_bblock,
        tuple(members),
        base,
        levels,
    )


def block_level_for(index: BlockIndex, node_count: int) -> tuple[int, int]:
    """(block level or -1 = whole topology, llblock level) for ``node_count`` nodes.

    Slurm's ``_get_block_level``: ``need = ceil(log2(ceil(n / bblock_node_cnt)))``; the block
    level is the lowest enabled level >= need; the llblock level the highest enabled level
    < need (0 when need is 0).
    """
    bblocks = max(1, math.ceil(node_count / index.bblock_node_cnt))
    need = (bblocks - 1).bit_length()
    lower = [level for level in index.levels if level <= need - 1]
    llblock = lower[-1] if need > 0 and lower else 0
    upper = [level for level in index.levels if level >= need]
    return (upper[0] if upper else -1), llblock


@dataclass(frozen=True, slots=True)
class AggregatedBlock:
    """A higher-level block, as ``scontrol show topology`` prints it."""

    name: str
    index: int
    nodes: str
    size: int


def aggregated_blocks(index: BlockIndex) -> tuple[AggregatedBlock, ...]:
    """The aggregated blocks of every enabled level above 0 (display and naming only).

    Runs of ``2**level`` bblocks starting at a multiple of it; a partial tail run is kept
    only if it is larger than what the next lower level can cover.
    """
    count = index.bblock_count
    sizes = [1 << level for level in index.levels]
    sizes = sizes[: next((i + 1 for i, s in enumerate(sizes) if s >= count), len(sizes))]
    result: list[AggregatedBlock] = []
    for j in range(1, len(sizes)):
        size, lower = sizes[j], sizes[j - 1]
        for start in range(0, count, size):
            remaining = count - start
            if size > remaining and lower >= remaining:
                continue
            members = range(start, min(start + size, count))
            names = [index.bblock_names[b] for b in members]
            nodes = [n for b in members for n in index.nodes.names_of(index.bblock_nodes[b])]
            result.append(
                AggregatedBlock(
                    compress(names, sort=False),
                    start // size,
                    compress(nodes) if nodes else "",
                    size * index.bblock_node_cnt,
                )
            )
    return tuple(result)
