"""topology/block configuration: its topology.yaml entry and its checks."""

from __future__ import annotations

from collections.abc import Collection

import yaml

from scheduler.topology.config.checks import owned_nodes, unique_names
from scheduler.topology.config.model import MAX_BLOCK_LEVEL, BlockConfig, BlockDef
from scheduler.topology.config.yaml_reader import YamlReader
from scheduler.topology.errors import TopologyConfigError

__all__ = ["block_levels_from_sizes", "parse_yaml", "validate"]


def parse_yaml(reader: YamlReader, node: yaml.Node, line: int) -> BlockConfig:
    pairs = reader.mapping(node, "block")
    reader.check_keys(pairs, ("block_sizes", "blocks"), "block")
    sizes: tuple[int, ...] | None = None
    blocks: tuple[BlockDef, ...] = ()
    for key, key_node, value in pairs:
        if key == "block_sizes":
            sizes = _block_sizes(reader, value)
            line = reader.line(key_node)
        else:
            blocks = tuple(
                BlockDef(*reader.named_nodes(item, "block"))
                for item in reader.sequence(value, "blocks")
            )
    if not blocks:
        reader.fail(node, "block needs a non-empty 'blocks' list")
    return BlockConfig(blocks, sizes, line)


def _block_sizes(reader: YamlReader, node: yaml.Node) -> tuple[int, ...]:
    """A list of sizes, or (as in topology.conf) one comma-separated string."""
    if isinstance(node, yaml.SequenceNode):
        return tuple(reader.integer(item, "a block size", minimum=1) for item in node.value)
    text = str(reader.scalar(node, "block_sizes"))
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        reader.fail(node, f"block_sizes must be a list of integers, not {text!r}")


def validate(config: BlockConfig, filename: str, known: Collection[str] | None) -> None:
    if not config.blocks:
        raise TopologyConfigError(
            filename, config.line, "a block topology needs at least one block"
        )
    unique_names(((b.name, b.line) for b in config.blocks), "block", filename)
    owned_nodes(((b.name, b.nodes, b.line) for b in config.blocks), "block", filename, known)
    if config.block_sizes is not None:
        block_levels_from_sizes(config.block_sizes, filename, config.line)
    elif not config.blocks[0].nodes:
        raise TopologyConfigError(
            filename, config.blocks[0].line, "without BlockSizes the first block must have nodes"
        )


def block_levels_from_sizes(
    sizes: tuple[int, ...], filename: str, line: int
) -> tuple[int, tuple[int, ...]]:
    """``BlockSizes`` → (planning base block size, enabled levels, ascending, 0 first).

    Every size after the first must be the first times ``2**k`` (``1 <= k <= 15``) and
    larger than the one before.
    """
    if not sizes:
        raise TopologyConfigError(filename, line, "BlockSizes is empty")
    base = sizes[0]
    if base < 1:
        raise TopologyConfigError(filename, line, f"BlockSizes: base size {base} must be >= 1")
    levels = [0]
    for size in sizes[1:]:
        ratio, remainder = divmod(size, base)
        level = ratio.bit_length() - 1
        if remainder or ratio < 2 or ratio != 1 << level or level > MAX_BLOCK_LEVEL:
            raise TopologyConfigError(
                filename,
                line,
                f"Invalid BlockSizes: {size} is not {base} times a power of two "
                f"(2 to 2**{MAX_BLOCK_LEVEL})",
            )
        if level <= levels[-1]:
            raise TopologyConfigError(
                filename, line, f"Invalid BlockSizes: {size} must be larger than the size before it"
            )
        levels.append(level)
    return base, tuple(levels)
