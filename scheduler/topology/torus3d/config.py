"""topology/torus3d configuration: its topology.yaml entry and its checks."""

from __future__ import annotations

from collections.abc import Collection

import yaml

from scheduler.topology.config.checks import owned_nodes, unique_names
from scheduler.topology.config.model import (
    Dims,
    Torus3dConfig,
    TorusDef,
    TorusPlacementShape,
    TorusRegion,
)
from scheduler.topology.config.yaml_reader import YamlReader
from scheduler.topology.errors import TopologyConfigError

__all__ = ["parse_yaml", "validate"]


def parse_yaml(reader: YamlReader, node: yaml.Node, line: int) -> Torus3dConfig:
    pairs = reader.mapping(node, "torus3d")
    reader.check_keys(pairs, ("toruses",), "torus3d")
    toruses: list[TorusDef] = []
    for _, _, value in pairs:
        toruses.extend(_torus(reader, item) for item in reader.sequence(value, "toruses"))
    return Torus3dConfig(tuple(toruses), line)


def _torus(reader: YamlReader, node: yaml.Node) -> TorusDef:
    pairs = reader.mapping(node, "a torus")
    reader.check_keys(pairs, ("name", "dims", "nodes", "regions", "placements"), "a torus")
    values = {k: v for k, _, v in pairs}
    for required in ("name", "dims"):
        if required not in values:
            reader.fail(node, f"each torus needs '{required}'")
    regions = tuple(
        TorusRegion(
            _dims(reader, _get(reader, item, "anchor"), "anchor", 0),
            _dims(reader, _get(reader, item, "dims"), "dims", 1),
            reader.hostlist(_get(reader, item, "nodes"), "nodes"),
            reader.line(item),
        )
        for item in (reader.sequence(values["regions"], "regions") if "regions" in values else [])
    )
    placements = tuple(
        _shape(reader, item)
        for item in (
            reader.sequence(values["placements"], "placements") if "placements" in values else []
        )
    )
    nodes = reader.hostlist(values["nodes"], "nodes") if "nodes" in values else ()
    return TorusDef(
        reader.text(values["name"], "name"),
        _dims(reader, values["dims"], "dims", 1),
        nodes,
        regions,
        placements,
        reader.line(node),
    )


def _get(reader: YamlReader, node: yaml.Node, key: str) -> yaml.Node:
    pairs = reader.mapping(node, "a region")
    reader.check_keys(pairs, ("anchor", "dims", "nodes"), "a region")
    values = {name: value for name, _, value in pairs}
    if key not in values:
        reader.fail(node, f"each region needs '{key}'")
    return values[key]


def _shape(reader: YamlReader, node: yaml.Node) -> TorusPlacementShape:
    pairs = reader.mapping(node, "a placement")
    reader.check_keys(pairs, ("dims", "anchor_seed", "anchor_spacing"), "a placement")
    values = {k: v for k, _, v in pairs}
    if "dims" not in values:
        reader.fail(node, "each placement needs 'dims'")
    seed = (
        _dims(reader, values["anchor_seed"], "anchor_seed", 0)
        if "anchor_seed" in values
        else Dims(0, 0, 0)
    )
    spacing = (
        _dims(reader, values["anchor_spacing"], "anchor_spacing", 1)
        if "anchor_spacing" in values
        else None
    )
    return TorusPlacementShape(
        _dims(reader, values["dims"], "dims", 1), seed, spacing, reader.line(node)
    )


def _dims(reader: YamlReader, node: yaml.Node, what: str, minimum: int) -> Dims:
    pairs = reader.mapping(node, what)
    reader.check_keys(pairs, ("x", "y", "z"), what)
    values = {k: v for k, _, v in pairs}
    for axis in ("x", "y", "z"):
        if axis not in values:
            reader.fail(node, f"{what} needs x, y and z")
    x, y, z = (reader.integer(values[a], f"{what}.{a}", minimum=minimum) for a in ("x", "y", "z"))
    return Dims(x, y, z)


def validate(config: Torus3dConfig, filename: str, known: Collection[str] | None) -> None:
    if not config.toruses:
        raise TopologyConfigError(filename, config.line, "a torus3d topology needs a torus")
    unique_names(((t.name, t.line) for t in config.toruses), "torus", filename)
    units: list[tuple[str, tuple[str, ...], int]] = []
    for torus in config.toruses:
        _validate_torus(torus, filename)
        nodes = torus.nodes or tuple(n for r in torus.regions for n in r.nodes)
        units.append((torus.name, nodes, torus.line))
    owned_nodes(units, "torus", filename, known)


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
