"""topology/ring configuration: its topology.yaml entry and its checks."""

from __future__ import annotations

from collections.abc import Collection

import yaml

from scheduler.topology.config.checks import owned_nodes, unique_names
from scheduler.topology.config.model import MAX_RING_SIZE, RingConfig, RingDef
from scheduler.topology.config.yaml_reader import YamlReader
from scheduler.topology.errors import TopologyConfigError

__all__ = ["parse_yaml", "validate"]


def parse_yaml(reader: YamlReader, node: yaml.Node, line: int) -> RingConfig:
    pairs = reader.mapping(node, "ring")
    reader.check_keys(pairs, ("rings",), "ring")
    rings: list[RingDef] = []
    for _, _, value in pairs:
        for item in reader.sequence(value, "rings"):
            rings.append(RingDef(*reader.named_nodes(item, "ring")))
    return RingConfig(tuple(rings), line)


def validate(config: RingConfig, filename: str, known: Collection[str] | None) -> None:
    if not config.rings:
        raise TopologyConfigError(filename, config.line, "a ring topology needs at least one ring")
    unique_names(((r.name, r.line) for r in config.rings), "ring", filename)
    for ring in config.rings:
        if len(ring.nodes) > MAX_RING_SIZE:
            raise TopologyConfigError(
                filename, ring.line, f"ring {ring.name!r} is bigger than {MAX_RING_SIZE} nodes"
            )
        if not ring.nodes:
            raise TopologyConfigError(filename, ring.line, f"ring {ring.name!r} has no nodes")
    owned_nodes(((r.name, r.nodes, r.line) for r in config.rings), "ring", filename, known)
