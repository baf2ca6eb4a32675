"""Parse topology.yaml text (Slurm 25.05+ schema) into a :class:`TopologySet`.

The file is a YAML list; each entry has ``topology: <name>`` first, an optional
``cluster_default``, and exactly one of ``tree``, ``block``, ``ring``, ``torus3d``,
``flat``. Pure: takes text, never opens files (the CLI reads them).
"""

from __future__ import annotations

from collections.abc import Collection

import yaml

from scheduler.topology.config.model import (
    KINDS,
    BlockConfig,
    BlockDef,
    Dims,
    FlatConfig,
    KindConfig,
    NamedTopology,
    RingConfig,
    RingDef,
    SwitchDef,
    TopologySet,
    Torus3dConfig,
    TorusDef,
    TorusPlacementShape,
    TorusRegion,
    TreeConfig,
)
from scheduler.topology.config.validate import validate_kind
from scheduler.topology.config.yaml_reader import YamlReader
from scheduler.topology.errors import TopologyConfigError

__all__ = ["parse_topology_yaml"]


def parse_topology_yaml(
    text: str, *, filename: str = "topology.yaml", known_nodes: Collection[str] | None = None
) -> TopologySet:
    """Parse and validate; raise :class:`TopologyConfigError` (file, line, reason) if bad.

    ``known_nodes``, when given, makes any node not in it an error ("unknown node").
    The result lists the ``cluster_default`` topology first, then the others in file order.
    """
    reader = YamlReader(filename, TopologyConfigError)
    root = reader.load(text)
    if root is None:
        raise TopologyConfigError(filename, 1, "the file defines no topology")
    items = reader.sequence(root, "topology.yaml (a list of topologies)")
    if not items:
        reader.fail(root, "the file defines no topology")
    topologies = [_topology(reader, item) for item in items]
    seen: dict[str, int] = {}
    default: NamedTopology | None = None
    for topology in topologies:
        if topology.name in seen:
            reader.fail(topology.line, f"topology {topology.name!r} is defined twice")
        seen[topology.name] = topology.line
        if topology.cluster_default:
            if default is not None:
                reader.fail(
                    topology.line,
                    f"two topologies have cluster_default: true ({default.name!r} and "
                    f"{topology.name!r})",
                )
            default = topology
        validate_kind(topology.config, filename, known_nodes)
    ordered = [t for t in topologies if t.cluster_default] + [
        t for t in topologies if not t.cluster_default
    ]
    return TopologySet(tuple(ordered), source=filename)


def _topology(reader: YamlReader, node: yaml.Node) -> NamedTopology:
    pairs = reader.mapping(node, "a topology")
    if not pairs or pairs[0][0] != "topology":
        reader.fail(node, "'topology: <name>' must be the first key of each topology")
    reader.check_keys(pairs, ("topology", "cluster_default", *KINDS), "a topology")
    name = reader.text(pairs[0][2], "topology")
    cluster_default = False
    kinds: list[tuple[str, yaml.Node, yaml.Node]] = []
    for key, key_node, value in pairs[1:]:
        if key == "cluster_default":
            cluster_default = reader.boolean(value, "cluster_default")
        else:
            kinds.append((key, key_node, value))
    if len(kinds) != 1:
        found = ", ".join(k for k, _, _ in kinds) or "none"
        reader.fail(
            node,
            f"topology {name!r} must define exactly one of {', '.join(KINDS)} (found: {found})",
        )
    kind, key_node, value = kinds[0]
    config = _KIND_PARSERS[kind](reader, value, reader.line(key_node))
    return NamedTopology(name, config, cluster_default, reader.line(node))


def _block(reader: YamlReader, node: yaml.Node, line: int) -> KindConfig:
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
                BlockDef(*_named_nodes(reader, item, "block"))
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


def _named_nodes(reader: YamlReader, node: yaml.Node, key: str) -> tuple[str, tuple[str, ...], int]:
    """(name, nodes, line) of a ``{<key>: name, nodes: hostlist}`` item."""
    pairs = reader.mapping(node, f"a {key}")
    reader.check_keys(pairs, (key, "nodes"), f"a {key}")
    values = {k: v for k, _, v in pairs}
    if key not in values:
        reader.fail(node, f"each {key} needs '{key}: <name>'")
    name = reader.text(values[key], key)
    nodes = reader.hostlist(values["nodes"], "nodes") if "nodes" in values else ()
    return name, nodes, reader.line(node)


def _tree(reader: YamlReader, node: yaml.Node, line: int) -> KindConfig:
    pairs = reader.mapping(node, "tree")
    reader.check_keys(pairs, ("switches",), "tree")
    switches: list[SwitchDef] = []
    for _, _, value in pairs:
        for item in reader.sequence(value, "switches"):
            entry = reader.mapping(item, "a switch")
            reader.check_keys(entry, ("switch", "children", "nodes"), "a switch")
            values = {k: v for k, _, v in entry}
            if "switch" not in values:
                reader.fail(item, "each switch needs 'switch: <name>'")
            switches.append(
                SwitchDef(
                    reader.text(values["switch"], "switch"),
                    reader.hostlist(values["nodes"], "nodes") if "nodes" in values else (),
                    reader.hostlist(values["children"], "children") if "children" in values else (),
                    reader.line(item),
                )
            )
    return TreeConfig(tuple(switches), line)


def _ring(reader: YamlReader, node: yaml.Node, line: int) -> KindConfig:
    pairs = reader.mapping(node, "ring")
    reader.check_keys(pairs, ("rings",), "ring")
    rings: list[RingDef] = []
    for _, _, value in pairs:
        for item in reader.sequence(value, "rings"):
            rings.append(RingDef(*_named_nodes(reader, item, "ring")))
    return RingConfig(tuple(rings), line)


def _dims(reader: YamlReader, node: yaml.Node, what: str, minimum: int) -> Dims:
    pairs = reader.mapping(node, what)
    reader.check_keys(pairs, ("x", "y", "z"), what)
    values = {k: v for k, _, v in pairs}
    for axis in ("x", "y", "z"):
        if axis not in values:
            reader.fail(node, f"{what} needs x, y and z")
    x, y, z = (reader.integer(values[a], f"{what}.{a}", minimum=minimum) for a in ("x", "y", "z"))
    return Dims(x, y, z)


def _torus3d(reader: YamlReader, node: yaml.Node, line: int) -> KindConfig:
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


def _flat(reader: YamlReader, node: yaml.Node, line: int) -> KindConfig:
    if isinstance(node, yaml.ScalarNode):
        if not reader.boolean(node, "flat"):
            reader.fail(node, "'flat: false' does not define a topology")
        return FlatConfig(False, line)
    pairs = reader.mapping(node, "flat")
    reader.check_keys(pairs, ("alpha_step_rank",), "flat")
    alpha = False
    for _, _, value in pairs:
        alpha = reader.boolean(value, "alpha_step_rank")
    return FlatConfig(alpha, line)


_KIND_PARSERS = {
    "block": _block,
    "tree": _tree,
    "ring": _ring,
    "torus3d": _torus3d,
    "flat": _flat,
}
