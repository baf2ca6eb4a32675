"""topology/torus3d records (Slurm 26.05 ``torus3d_record.c``).

A torus maps coordinates to nodes, x-major (``x + y*X + z*X*Y``), from ``nodes`` or from
``regions``. Each allowed placement shape has anchors on a grid: per axis ``seed,
seed+spacing, ...`` (mod the torus size) until the grid wraps back to the seed; anchors are
enumerated x outermost, z innermost. A placement at an anchor covers ``dims`` cells from it
and may wrap. Placements are sorted by size (stable). For the fragmentation cost, each
placement knows which anchors of the next larger placement each of its anchors overlaps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.common.nodes import NodeTable
from scheduler.topology.config.model import Dims, NamedTopology, Torus3dConfig, TorusDef

__all__ = ["PlacementRecord", "Torus", "TorusIndex", "build_torus_index"]


@dataclass(frozen=True, slots=True, eq=False)
class PlacementRecord:
    """One shape on one torus: ``anchors[a]`` = node indices of anchor ``a`` in the
    sub-cube's x-major order (-1 = unmapped cell); ``next_overlap[a, b]`` = anchor ``a``
    shares a cell with anchor ``b`` of the next larger placement (``None`` if none)."""

    dims: Dims
    size: int
    anchors: NDArray[np.intp]
    full: NDArray[np.bool_]
    has_overlap: bool
    next_anchors: NDArray[np.intp] | None
    next_overlap: NDArray[np.bool_] | None


@dataclass(frozen=True, slots=True, eq=False)
class Torus:
    """One torus: dims, node per cell (-1 unmapped), placements by size."""

    name: str
    dims: Dims
    cells: NDArray[np.intp]
    placements: tuple[PlacementRecord, ...]


@dataclass(frozen=True, slots=True, eq=False)
class TorusIndex:
    """Toruses over the cluster's nodes; ``node_torus[i]`` is node ``i``'s torus or -1."""

    name: str
    nodes: NodeTable
    toruses: tuple[Torus, ...]
    node_torus: NDArray[np.int32]
    kind: ClassVar[str] = "torus3d"

    @property
    def covered(self) -> NDArray[np.bool_]:
        """Nodes on some torus."""
        return self.node_torus >= 0


def build_torus_index(config: NamedTopology, node_names: Sequence[str]) -> TorusIndex:
    """Pure. Nodes absent from ``node_names`` leave their cells unmapped (Slurm warns)."""
    torus3d = config.config
    if not isinstance(torus3d, Torus3dConfig):
        raise TypeError(f"topology {config.name!r} is {config.kind}, not torus3d")
    table = NodeTable.of(node_names)
    node_torus = np.full(table.size, -1, dtype=np.int32)
    toruses = []
    for number, definition in enumerate(torus3d.toruses):
        cells = _cells(definition, table)
        node_torus[cells[cells >= 0]] = number
        toruses.append(
            Torus(definition.name, definition.dims, cells, _placements(definition, cells))
        )
    return TorusIndex(config.name, table, tuple(toruses), node_torus)


def _cell(dims: Dims, x: int, y: int, z: int) -> int:
    return x + y * dims.x + z * dims.x * dims.y


def _cells(definition: TorusDef, table: NodeTable) -> NDArray[np.intp]:
    dims = definition.dims
    cells = np.full(dims.volume, -1, dtype=np.intp)
    if definition.nodes:
        for cell, name in enumerate(definition.nodes):
            cells[cell] = table.position.get(name, -1)
    for region in definition.regions:
        a, d = region.anchor, region.dims
        for offset, name in enumerate(region.nodes):
            x, y, z = offset % d.x, (offset // d.x) % d.y, offset // (d.x * d.y)
            cells[_cell(dims, a.x + x, a.y + y, a.z + z)] = table.position.get(name, -1)
    return cells


def _axis(size: int, stride: int, seed: int) -> list[int]:
    positions = [seed]
    while True:
        position = (positions[-1] + stride) % size
        if position == positions[0]:
            return positions
        positions.append(position)


def _anchor_cells(torus: TorusDef, shape_dims: Dims, spacing: Dims, seed: Dims) -> NDArray[np.intp]:
    """(anchors, cells of the sub-cube in x-major order)."""
    t = torus.dims
    rows = []
    for ax in _axis(t.x, spacing.x, seed.x):
        for ay in _axis(t.y, spacing.y, seed.y):
            for az in _axis(t.z, spacing.z, seed.z):
                rows.append(
                    [
                        _cell(t, (ax + dx) % t.x, (ay + dy) % t.y, (az + dz) % t.z)
                        for dz in range(shape_dims.z)
                        for dy in range(shape_dims.y)
                        for dx in range(shape_dims.x)
                    ]
                )
    return np.asarray(rows, dtype=np.intp)


def _placements(definition: TorusDef, cells: NDArray[np.intp]) -> tuple[PlacementRecord, ...]:
    shapes = sorted(definition.placements, key=lambda s: s.dims.volume)
    grids = [_anchor_cells(definition, s.dims, s.spacing, s.anchor_seed) for s in shapes]
    volume = definition.dims.volume
    incidence = []
    for grid in grids:
        matrix = np.zeros((len(grid), volume), dtype=np.int64)
        np.put_along_axis(matrix, grid, 1, axis=1)
        incidence.append(matrix)
    records = []
    for i, (shape, grid) in enumerate(zip(shapes, grids, strict=True)):
        size = shape.dims.volume
        same = [j for j, s in enumerate(shapes) if s.dims.volume == size]
        overlap = any(_shares_cells(incidence, i, j) for j in same)
        following = next(
            (j for j in range(i + 1, len(shapes)) if shapes[j].dims.volume > size), None
        )
        next_anchors = cells[grids[following]] if following is not None else None
        next_overlap = (
            (incidence[i] @ incidence[following].T) > 0 if following is not None else None
        )
        anchors = cells[grid]
        records.append(
            PlacementRecord(
                shape.dims,
                size,
                anchors,
                np.asarray((anchors >= 0).all(axis=1), dtype=bool),
                overlap,
                next_anchors,
                next_overlap,
            )
        )
    return tuple(records)


def _shares_cells(incidence: list[NDArray[np.int64]], i: int, j: int) -> bool:
    """Do two placements (or two anchors of one placement) cover a common cell?"""
    shared = (incidence[i] @ incidence[j].T) > 0
    if i == j:
        np.fill_diagonal(shared, False)
    return bool(shared.any())
