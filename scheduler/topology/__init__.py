"""Topology-aware placement: Slurm's flat, tree, block, ring and torus3d, as pure functions.

Configuration (text in, frozen records out)::

    topologies = parse_topology_yaml(text, filename="topology.yaml", known_nodes=names)
    topologies = parse_topology_conf(text)              # one topology named "default"

Placement::

    index = build_index(topologies.default, node_names)  # or REGISTRY[kind].build(...)
    eligible = eligible_mask(index, free_node_names)     # numpy bool mask, index order
    result = place(index, PlacementRequest(nodes_min=40, segment=8), eligible)
    # -> Placement(nodes, indices, segments, blocked_nodes) | Unplaceable(reason, retryable, ...)

Discovery (ibnetdiscover / NVLink cliques → topology.yaml text, Topograph node labels) lives
in :mod:`scheduler.topology.discovery`.
"""

from typing import TYPE_CHECKING

from scheduler.lazy import lazy_exports

if TYPE_CHECKING:
    from scheduler.topology.block import BlockIndex, BlockPlugin, aggregated_blocks, block_level_for
    from scheduler.topology.common.budget import INFINITE, LayeredBudget
    from scheduler.topology.common.evaluation import MAX_EVALUATIONS
    from scheduler.topology.common.nodes import NodeTable
    from scheduler.topology.common.protocol import TopologyIndex, TopologyPlugin
    from scheduler.topology.common.types import (
        DEFAULT_MAX_SWITCH_WAIT_S,
        Availability,
        BoolMask,
        Placement,
        PlacementRequest,
        Segment,
        Unplaceable,
        UnplaceableReason,
    )
    from scheduler.topology.config.model import NamedTopology, TopologySet
    from scheduler.topology.config.topology_conf import (
        DEFAULT_TOPOLOGY_NAME,
        parse_topology_conf,
    )
    from scheduler.topology.config.topology_yaml import parse_topology_yaml
    from scheduler.topology.errors import ConfigError, TopologyConfigError
    from scheduler.topology.flat import FlatIndex, FlatPlugin
    from scheduler.topology.hostlist import (
        HostlistError,
        compress,
        expand,
        natural_key,
        natural_sorted,
    )
    from scheduler.topology.registry import REGISTRY, build_index, eligible_mask, place, plugin_for
    from scheduler.topology.ring import RingIndex, RingPlugin
    from scheduler.topology.torus3d import Torus3dPlugin, TorusIndex
    from scheduler.topology.tree import TreeIndex, TreePlugin

# Imported when first used (PEP 562), so that importing one submodule (the node daemon's
# scheduler.topology.…) does not load the whole package: name → (module, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "Availability": ("scheduler.topology.common.types", "Availability"),
    "BlockIndex": ("scheduler.topology.block", "BlockIndex"),
    "BlockPlugin": ("scheduler.topology.block", "BlockPlugin"),
    "BoolMask": ("scheduler.topology.common.types", "BoolMask"),
    "ConfigError": ("scheduler.topology.errors", "ConfigError"),
    "DEFAULT_MAX_SWITCH_WAIT_S": ("scheduler.topology.common.types", "DEFAULT_MAX_SWITCH_WAIT_S"),
    "DEFAULT_TOPOLOGY_NAME": ("scheduler.topology.config.topology_conf", "DEFAULT_TOPOLOGY_NAME"),
    "FlatIndex": ("scheduler.topology.flat", "FlatIndex"),
    "FlatPlugin": ("scheduler.topology.flat", "FlatPlugin"),
    "HostlistError": ("scheduler.topology.hostlist", "HostlistError"),
    "INFINITE": ("scheduler.topology.common.budget", "INFINITE"),
    "LayeredBudget": ("scheduler.topology.common.budget", "LayeredBudget"),
    "MAX_EVALUATIONS": ("scheduler.topology.common.evaluation", "MAX_EVALUATIONS"),
    "NamedTopology": ("scheduler.topology.config.model", "NamedTopology"),
    "NodeTable": ("scheduler.topology.common.nodes", "NodeTable"),
    "Placement": ("scheduler.topology.common.types", "Placement"),
    "PlacementRequest": ("scheduler.topology.common.types", "PlacementRequest"),
    "REGISTRY": ("scheduler.topology.registry", "REGISTRY"),
    "RingIndex": ("scheduler.topology.ring", "RingIndex"),
    "RingPlugin": ("scheduler.topology.ring", "RingPlugin"),
    "Segment": ("scheduler.topology.common.types", "Segment"),
    "TopologyConfigError": ("scheduler.topology.errors", "TopologyConfigError"),
    "TopologyIndex": ("scheduler.topology.common.protocol", "TopologyIndex"),
    "TopologyPlugin": ("scheduler.topology.common.protocol", "TopologyPlugin"),
    "TopologySet": ("scheduler.topology.config.model", "TopologySet"),
    "Torus3dPlugin": ("scheduler.topology.torus3d", "Torus3dPlugin"),
    "TorusIndex": ("scheduler.topology.torus3d", "TorusIndex"),
    "TreeIndex": ("scheduler.topology.tree", "TreeIndex"),
    "TreePlugin": ("scheduler.topology.tree", "TreePlugin"),
    "Unplaceable": ("scheduler.topology.common.types", "Unplaceable"),
    "UnplaceableReason": ("scheduler.topology.common.types", "UnplaceableReason"),
    "aggregated_blocks": ("scheduler.topology.block", "aggregated_blocks"),
    "block_level_for": ("scheduler.topology.block", "block_level_for"),
    "build_index": ("scheduler.topology.registry", "build_index"),
    "compress": ("scheduler.topology.hostlist", "compress"),
    "eligible_mask": ("scheduler.topology.registry", "eligible_mask"),
    "expand": ("scheduler.topology.hostlist", "expand"),
    "natural_key": ("scheduler.topology.hostlist", "natural_key"),
    "natural_sorted": ("scheduler.topology.hostlist", "natural_sorted"),
    "parse_topology_conf": ("scheduler.topology.config.topology_conf", "parse_topology_conf"),
    "parse_topology_yaml": ("scheduler.topology.config.topology_yaml", "parse_topology_yaml"),
    "place": ("scheduler.topology.registry", "place"),
    "plugin_for": ("scheduler.topology.registry", "plugin_for"),
}

__all__ = [
    "DEFAULT_MAX_SWITCH_WAIT_S",
    "DEFAULT_TOPOLOGY_NAME",
    "INFINITE",
    "MAX_EVALUATIONS",
    "REGISTRY",
    "Availability",
    "BlockIndex",
    "BlockPlugin",
    "BoolMask",
    "ConfigError",
    "FlatIndex",
    "FlatPlugin",
    "HostlistError",
    "LayeredBudget",
    "NamedTopology",
    "NodeTable",
    "Placement",
    "PlacementRequest",
    "RingIndex",
    "RingPlugin",
    "Segment",
    "TopologyConfigError",
    "TopologyIndex",
    "TopologyPlugin",
    "TopologySet",
    "Torus3dPlugin",
    "TorusIndex",
    "TreeIndex",
    "TreePlugin",
    "Unplaceable",
    "UnplaceableReason",
    "aggregated_blocks",
    "block_level_for",
    "build_index",
    "compress",
    "eligible_mask",
    "expand",
    "natural_key",
    "natural_sorted",
    "parse_topology_conf",
    "parse_topology_yaml",
    "place",
    "plugin_for",
]


__getattr__, __dir__ = lazy_exports("scheduler.topology", globals(), _LAZY)
