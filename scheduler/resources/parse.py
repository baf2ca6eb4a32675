"""Parse resources.yaml text (Slurm 25.11 schema) into :class:`ResourcesConfig`.

Each entry: ``resource`` (first key, unique), ``mode`` (``MODE_1|MODE_2|MODE_3``), optional
``topology`` (Mode 3 only: a block topology with the same layout), optional ``variables``
(``[{name, value}]``), and ``layers`` (``[{nodes: [hostlist...], count, base: [{name,
value}]}]``, ``count: -1`` = no limit). Pure: text in, records out.
"""

from __future__ import annotations

from collections.abc import Collection

import yaml

from scheduler.resources.errors import ResourcesConfigError
from scheduler.resources.hierarchy import TreeProblem, mode3_tree
from scheduler.resources.model import (
    INFINITE_COUNT,
    Layer,
    Mode,
    Resource,
    ResourcesConfig,
    Variable,
)
from scheduler.topology.config.yaml_reader import YamlReader

__all__ = ["parse_resources_yaml"]

_KEYS = ("resource", "mode", "topology", "variables", "layers")


def parse_resources_yaml(
    text: str,
    *,
    filename: str = "resources.yaml",
    known_nodes: Collection[str] | None = None,
    cluster_licenses: Collection[str] = (),
) -> ResourcesConfig:
    """Parse and validate; raise :class:`ResourcesConfigError` (file, line, reason) if bad.

    ``known_nodes`` makes unknown nodes errors; ``cluster_licenses`` are names a resource
    must not reuse.
    """
    reader = YamlReader(filename, ResourcesConfigError)
    root = reader.load(text)
    if root is None:
        return ResourcesConfig((), source=filename)
    resources = [_resource(reader, item, known_nodes) for item in reader.sequence(root, "the file")]
    seen: set[str] = set()
    for resource in resources:
        if resource.name in seen:
            reader.fail(resource.line, f"resource {resource.name!r} is defined twice")
        if resource.name in cluster_licenses:
            reader.fail(resource.line, f"resource {resource.name!r} clashes with a cluster license")
        seen.add(resource.name)
    return ResourcesConfig(tuple(resources), source=filename)


def _resource(reader: YamlReader, node: yaml.Node, known: Collection[str] | None) -> Resource:
    pairs = reader.mapping(node, "a resource")
    if not pairs or pairs[0][0] != "resource":
        reader.fail(node, "'resource: <name>' must be the first key of each resource")
    reader.check_keys(pairs, _KEYS, "a resource")
    values = {key: (key_node, value) for key, key_node, value in pairs}
    name = reader.text(values["resource"][1], "resource")
    if "mode" not in values:
        reader.fail(node, f"resource {name!r} needs a mode (MODE_1, MODE_2 or MODE_3)")
    mode_text = reader.text(values["mode"][1], "mode")
    if mode_text not in Mode.__members__:
        reader.fail(values["mode"][1], f"mode must be MODE_1, MODE_2 or MODE_3, not {mode_text!r}")
    mode = Mode[mode_text]
    topology = None
    if "topology" in values:
        if mode is not Mode.MODE_3:
            reader.fail(values["topology"][0], "topology is only valid for MODE_3 resources")
        topology = reader.text(values["topology"][1], "topology")
    variables = (
        _variables(reader, values["variables"][1], "variables") if "variables" in values else ()
    )
    if "layers" not in values:
        reader.fail(node, f"resource {name!r} needs layers")
    layers = tuple(
        _layer(reader, item, known) for item in reader.sequence(values["layers"][1], "layers")
    )
    if not layers:
        reader.fail(values["layers"][1], f"resource {name!r} needs at least one layer")
    resource = Resource(name, mode, layers, variables, topology, reader.line(node))
    _check_layers(reader, resource)
    return resource


def _variables(reader: YamlReader, node: yaml.Node, what: str) -> tuple[Variable, ...]:
    result: list[Variable] = []
    for item in reader.sequence(node, what):
        pairs = reader.mapping(item, f"an entry of {what}")
        reader.check_keys(pairs, ("name", "value"), f"an entry of {what}")
        values = {k: v for k, _, v in pairs}
        if "name" not in values or "value" not in values:
            reader.fail(item, f"each entry of {what} needs name and value")
        variable = Variable(
            reader.text(values["name"], "name"), reader.integer(values["value"], "value", minimum=0)
        )
        if any(v.name == variable.name for v in result):
            reader.fail(item, f"{variable.name!r} appears twice in {what}")
        result.append(variable)
    return tuple(result)


def _layer(reader: YamlReader, node: yaml.Node, known: Collection[str] | None) -> Layer:
    pairs = reader.mapping(node, "a layer")
    reader.check_keys(pairs, ("nodes", "count", "base"), "a layer")
    values = {k: v for k, _, v in pairs}
    if "nodes" not in values or "count" not in values:
        reader.fail(node, "each layer needs nodes and count")
    nodes = reader.hostlist(values["nodes"], "nodes")
    if not nodes:
        reader.fail(node, "a layer needs at least one node")
    if len(set(nodes)) != len(nodes):
        reader.fail(node, "a layer lists a node twice")
    for name in nodes:
        if known is not None and name not in known:
            reader.fail(node, f"unknown node {name!r} in a layer")
    count = reader.integer(values["count"], "count", minimum=INFINITE_COUNT)
    base = _variables(reader, values["base"], "base") if "base" in values else ()
    layer = Layer(nodes, count, base, reader.line(node))
    if count != INFINITE_COUNT and layer.base_usage > count:
        reader.fail(node, f"base usage {layer.base_usage} is greater than count {count}")
    return layer


def _check_layers(reader: YamlReader, resource: Resource) -> None:
    if resource.mode is Mode.MODE_3:
        tree = mode3_tree(resource.layers)
        if isinstance(tree, TreeProblem):
            reader.fail(
                resource.layers[tree.layer].line, f"resource {resource.name!r}: {tree.reason}"
            )
        return
    seen: dict[frozenset[str], int] = {}
    for layer in resource.layers:
        key = frozenset(layer.nodes)
        if key in seen:
            reader.fail(layer.line, f"resource {resource.name!r}: duplicate layer")
        seen[key] = layer.line
