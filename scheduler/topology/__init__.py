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
from scheduler.topology.config import (
    DEFAULT_TOPOLOGY_NAME,
    NamedTopology,
    TopologySet,
    parse_topology_conf,
    parse_topology_yaml,
)
from scheduler.topology.errors import ConfigError, TopologyConfigError
from scheduler.topology.flat import FlatIndex, FlatPlugin
from scheduler.topology.hostlist import HostlistError, compress, expand, natural_key, natural_sorted
from scheduler.topology.registry import REGISTRY, build_index, eligible_mask, place, plugin_for
from scheduler.topology.ring import RingIndex, RingPlugin
from scheduler.topology.torus3d import Torus3dPlugin, TorusIndex
from scheduler.topology.tree import TreeIndex, TreePlugin

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
