"""Checks shared by topology.yaml and topology.conf, applied to the parsed records.

Sluice is stricter than Slurm where Slurm only warns: a node in two blocks, rings or leaf
switches, an unknown node (when the caller passes the cluster's node names), a switch with
both nodes and children, or a switch with two parents is an error, because a scheduler that
silently picks one reading of an ambiguous file is hard to audit.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from scheduler.topology.config.model import (
    MAX_BLOCK_LEVEL,
    MAX_RING_SIZE,
    MAX_SWITCH_NAME,
    BlockConfig,
    KindConfig,
    RingConfig,
    Torus3dConfig,
    TorusDef,
    TorusPlacementShape,
    TreeConfig,
)
from scheduler.topology.errors import TopologyConfigError

__all__ = ["block_levels_from_sizes", "validate_kind"]


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


def validate_kind(config: KindConfig, filename: str, known: Collection[str] | None) -> None:
    """Check one topology's records; raise :class:`TopologyConfigError` at the first problem."""
    if isinstance(config, BlockConfig):
        _validate_block(config, filename, known)
    elif isinstance(config, TreeConfig):
        _validate_tree(config, filename, known)
    elif isinstance(config, RingConfig):
        _validate_ring(config, filename, known)
    elif isinstance(config, Torus3dConfig):
        _validate_torus3d(config, filename, known)


def _unique_names(items: Iterable[tuple[str, int]], what: str, filename: str) -> None:
    seen: set[str] = set()
    for name, line in items:
        if name in seen:
            raise TopologyConfigError(filename, line, f"{what} {name!r} is defined twice")
        seen.add(name)


def _owned_nodes(
    units: Iterable[tuple[str, tuple[str, ...], int]],
    what: str,
    filename: str,
    known: Collection[str] | None,
) -> None:
    """Each node in at most one unit, and known to the cluster when ``known`` is given."""
    owner: dict[str, str] = {}
    for unit, nodes, line in units:
        for node in nodes:
            if known is not None and node not in known:
                raise TopologyConfigError(
                    filename, line, f"unknown node {node!r} in {what} {unit!r}"
                )
            if node in owner:
                where = (
                    "twice" if owner[node] == unit else f"in {what}s {owner[node]!r} and {unit!r}"
                )
                raise TopologyConfigError(filename, line, f"node {node!r} appears {where}")
            owner[node] = unit


def _validate_block(config: BlockConfig, filename: str, known: Collection[str] | None) -> None:
    if not config.blocks:
        raise TopologyConfigError(
            filename, config.line, "a block topology needs at least one block"
        )
    _unique_names(((b.name, b.line) for b in config.blocks), "block", filename)
    _owned_nodes(((b.name, b.nodes, b.line) for b in config.blocks), "block", filename, known)
    if config.block_sizes is not None:
        block_levels_from_sizes(config.block_sizes, filename, config.line)
    elif not config.blocks[0].nodes:
        raise TopologyConfigError(
            filename, config.blocks[0].line, "without BlockSizes the first block must have nodes"
        )


def _validate_tree(config: TreeConfig, filename: str, known: Collection[str] | None) -> None:
    if not config.switches:
        raise TopologyConfigError(
            filename, config.line, "a tree topology needs at least one switch"
        )
    _unique_names(((s.name, s.line) for s in config.switches), "switch", filename)
    names = {s.name for s in config.switches}
    parent: dict[str, str] = {}
    for switch in config.switches:
        if len(switch.name) > MAX_SWITCH_NAME:
            raise TopologyConfigError(
                filename, switch.line, f"switch name {switch.name!r} is longer than 64 characters"
            )
        if switch.nodes and switch.children:
            raise TopologyConfigError(
                filename, switch.line, f"switch {switch.name!r} has both nodes and children"
            )
        for child in switch.children:
            if child not in names or child == switch.name:
                raise TopologyConfigError(
                    filename, switch.line, f"switch {switch.name!r} has invalid child {child!r}"
                )
            if child in parent:
                raise TopologyConfigError(
                    filename,
                    switch.line,
                    f"switch {child!r} has two parents ({parent[child]!r} and {switch.name!r})",
                )
            parent[child] = switch.name
    _check_acyclic(config, parent, filename)
    _owned_nodes(
        ((s.name, s.nodes, s.line) for s in config.switches), "leaf switch", filename, known
    )


def _check_acyclic(config: TreeConfig, parent: dict[str, str], filename: str) -> None:
    for switch in config.switches:
        seen = {switch.name}
        current = switch.name
        while current in parent:
            current = parent[current]
            if current in seen:
                raise TopologyConfigError(
                    filename,
                    switch.line,
                    f"switch configuration is not a tree (cycle at {current!r})",
                )
            seen.add(current)


def _validate_ring(config: RingConfig, filename: str, known: Collection[str] | None) -> None:
    if not config.rings:
        raise TopologyConfigError(filename, config.line, "a ring topology needs at least one ring")
    _unique_names(((r.name, r.line) for r in config.rings), "ring", filename)
    for ring in config.rings:
        if len(ring.nodes) > MAX_RING_SIZE:
            raise TopologyConfigError(
                filename, ring.line, f"ring {ring.name!r} is bigger than {MAX_RING_SIZE} nodes"
            )
        if not ring.nodes:
            raise TopologyConfigError(filename, ring.line, f"ring {ring.name!r} has no nodes")
    _owned_nodes(((r.name, r.nodes, r.line) for r in config.rings), "ring", filename, known)


def _validate_torus3d(config: Torus3dConfig, filename: str, known: Collection[str] | None) -> None:
    if not config.toruses:
        raise TopologyConfigError(filename, config.line, "a torus3d topology needs a torus")
    _unique_names(((t.name, t.line) for t in config.toruses), "torus", filename)
    units: list[tuple[str, tuple[str, ...], int]] = []
    for torus in config.toruses:
        _validate_torus(torus, filename)
        nodes = torus.nodes or tuple(n for r in torus.regions for n in r.nodes)
        units.append((torus.name, nodes, torus.line))
    _owned_nodes(units, "torus", filename, known)


def _validate_torus(torus: TorusDef, filename: str) -> None:
    dims = torus.dims
    if min(dims.x, dims.y, dims.z) < 1:
        raise TopologyConfigError(filename, torus.line, f"torus {torus.name!r}: dims must be >= 1")
    if torus.nodes and torus.regions:
        raise TopologyConfigError(
            filename, torus.line, f"torus {torus.name!r}: give nodes or regions, not both"
        )
    if torus.nodes and len(torus.nodes) != dims.volume:
        raise TopologyConfigError(
            filename,
            torus.line,
            f"torus {torus.name!r}: dims {dims.x}x{dims.y}x{dims.z}={dims.volume} "
            f"do not match node count {len(torus.nodes)}",
        )
    cells: set[tuple[int, int, int]] = set()
    for region in torus.regions:
        a, d = region.anchor, region.dims
        if min(d.x, d.y, d.z) < 1 or min(a.x, a.y, a.z) < 0:
            raise TopologyConfigError(
                filename, region.line, "region dims must be >= 1, anchor >= 0"
            )
        if a.x + d.x > dims.x or a.y + d.y > dims.y or a.z + d.z > dims.z:
            raise TopologyConfigError(filename, region.line, "region exceeds the torus dimensions")
        if len(region.nodes) != d.volume:
            raise TopologyConfigError(
                filename, region.line, "region node count does not match dims"
            )
        region_cells = {
            (a.x + x, a.y + y, a.z + z) for z in range(d.z) for y in range(d.y) for x in range(d.x)
        }
        if cells & region_cells:
            raise TopologyConfigError(filename, region.line, "region overlaps another region")
        cells |= region_cells
    for shape in torus.placements:
        _validate_shape(torus, shape, filename)


def _validate_shape(torus: TorusDef, shape: TorusPlacementShape, filename: str) -> None:
    d, t, s, seed = shape.dims, torus.dims, shape.spacing, shape.anchor_seed
    if min(d.x, d.y, d.z) < 1:
        raise TopologyConfigError(filename, shape.line, "placement dims must be non-zero")
    if d.x > t.x or d.y > t.y or d.z > t.z:
        raise TopologyConfigError(filename, shape.line, "placement dims exceed torus dimensions")
    if min(s.x, s.y, s.z) < 1 or s.x > t.x or s.y > t.y or s.z > t.z:
        raise TopologyConfigError(
            filename, shape.line, "placement anchor_spacing must be within torus dimensions"
        )
    if not (0 <= seed.x < t.x and 0 <= seed.y < t.y and 0 <= seed.z < t.z):
        raise TopologyConfigError(
            filename, shape.line, "placement anchor_seed must be within torus dimensions"
        )
