"""Parse topology.yaml text (Slurm 25.05+ schema) into a :class:`TopologySet`.

The file is a YAML list; each entry has ``topology: <name>`` first, an optional
``cluster_default``, and exactly one kind key (``tree``, ``block``, ``ring``, ``torus3d``,
``flat``: the registry's kinds, each parsed by its plugin's ``parse_yaml``). Pure: takes
text, never opens files (the CLI reads them).
"""

from __future__ import annotations

from collections.abc import Collection

import yaml

from scheduler.topology.config.model import NamedTopology, TopologySet
from scheduler.topology.config.yaml_reader import YamlReader
from scheduler.topology.errors import TopologyConfigError
from scheduler.topology.registry import KINDS, plugin_for, validate_kind

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
    config = plugin_for(kind).parse_yaml(reader, value, reader.line(key_node))
    return NamedTopology(name, config, cluster_default, reader.line(node))
