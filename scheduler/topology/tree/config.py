"""topology/tree configuration: its topology.yaml entry and its checks."""

from __future__ import annotations

from collections.abc import Collection

import yaml

from scheduler.topology.config.checks import owned_nodes, unique_names
from scheduler.topology.config.model import MAX_SWITCH_NAME, SwitchDef, TreeConfig
from scheduler.topology.config.yaml_reader import YamlReader
from scheduler.topology.errors import TopologyConfigError

__all__ = ["parse_yaml", "validate"]


def parse_yaml(reader: YamlReader, node: yaml.Node, line: int) -> TreeConfig:
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


def validate(config: TreeConfig, filename: str, known: Collection[str] | None) -> None:
    if not config.switches:
        raise TopologyConfigError(
            filename, config.line, "a tree topology needs at least one switch"
        )
    unique_names(((s.name, s.line) for s in config.switches), "switch", filename)
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
    owned_nodes(
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
