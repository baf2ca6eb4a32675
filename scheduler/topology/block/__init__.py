"""topology/block: base blocks, BlockSizes levels, best-fit blocks, segments, exclusive topo."""

from scheduler.topology.block.plugin import BlockPlugin
from scheduler.topology.block.record import (
    AggregatedBlock,
    BlockIndex,
    aggregated_blocks,
    block_level_for,
    build_block_index,
)

__all__ = [
    "AggregatedBlock",
    "BlockIndex",
    "BlockPlugin",
    "aggregated_blocks",
    "block_level_for",
    "build_block_index",
]
