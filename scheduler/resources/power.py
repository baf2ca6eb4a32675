"""Mode 3 for placement: power capping along PDU → rack → row → data centre.

:func:`layered_budget` turns one Mode-3 resource and its current usage into the
:class:`~scheduler.topology.LayeredBudget` a topology plugin enforces node by node. When the
resource names a block topology (``topology:`` in resources.yaml), the block plugin also
caps every base block at ``leaf capacity // per-node amount`` before choosing a block, so
block placement and the power budget are optimised together (Slurm 25.11).
:func:`check_block_mapping` verifies that the leaves have the block topology's layout.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduler.resources.availability import HresIndex, HresUsage
from scheduler.resources.model import INFINITE_COUNT, Mode, ResourcesConfig
from scheduler.topology.common.budget import INFINITE, LayeredBudget
from scheduler.topology.common.nodes import NodeTable
from scheduler.topology.config.model import BlockConfig, TopologySet

__all__ = ["check_block_mapping", "layered_budget"]


def layered_budget(
    index: HresIndex,
    usage: HresUsage,
    resource: str,
    per_node: int,
    nodes: NodeTable | Sequence[str],
) -> LayeredBudget:
    """The budget of a Mode-3 ``resource`` for a job drawing ``per_node`` units per node,
    on the node order of ``nodes`` (pass the topology index's ``nodes``)."""
    entry = index.resources[resource]
    tree = entry.tree
    if entry.resource.mode is not Mode.MODE_3 or tree is None:
        raise ValueError(f"{resource!r} is not a MODE_3 resource")
    names = nodes.names if isinstance(nodes, NodeTable) else tuple(nodes)
    node_leaf = np.full(len(names), -1, dtype=np.int32)
    for number, leaf in enumerate(tree.leaves):
        for name in entry.resource.layers[leaf].nodes:
            position = _position(names, name, nodes)
            if position is not None:
                node_leaf[position] = number
    depth = max(len(path) for path in tree.paths)
    paths = np.full((len(tree.leaves), depth), -1, dtype=np.int32)
    for number, path in enumerate(tree.paths):
        paths[number, : len(path)] = path
    used = usage.of(resource, len(entry.totals))
    available = np.asarray(
        [
            INFINITE if total == INFINITE_COUNT else max(0, total - u)
            for total, u in zip(entry.totals, used, strict=True)
        ],
        dtype=np.int64,
    )
    layer_names = tuple(f"{resource}[{i}]" for i in range(len(entry.totals)))
    return LayeredBudget(
        per_node, node_leaf, paths, available, entry.resource.topology, layer_names
    )


def _position(names: tuple[str, ...], name: str, nodes: NodeTable | Sequence[str]) -> int | None:
    if isinstance(nodes, NodeTable):
        return nodes.position.get(name)
    try:
        return names.index(name)
    except ValueError:
        return None


def check_block_mapping(resources: ResourcesConfig, topologies: TopologySet) -> list[str]:
    """Problems with Mode-3 resources mapped to block topologies (empty when consistent).

    The named topology must exist and be a block topology, and every leaf layer must hold
    exactly the nodes of one base block.
    """
    problems: list[str] = []
    for resource in resources.resources:
        if resource.topology is None:
            continue
        try:
            topology = topologies.get(resource.topology)
        except KeyError:
            problems.append(f"{resource.name}: topology {resource.topology!r} does not exist")
            continue
        if not isinstance(topology.config, BlockConfig):
            problems.append(
                f"{resource.name}: topology {resource.topology!r} is not a block topology"
            )
            continue
        blocks = {frozenset(b.nodes) for b in topology.config.blocks if b.nodes}
        layers = [frozenset(layer.nodes) for layer in resource.layers]
        leaves = [s for s in layers if not any(o < s for o in layers)]
        for leaf in leaves:
            if leaf not in blocks:
                problems.append(f"{resource.name}: a leaf layer does not match any base block")
                break
    return problems
