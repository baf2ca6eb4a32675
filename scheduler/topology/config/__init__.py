"""topology.yaml / topology.conf: parse text into frozen records (pure; the CLI reads files)."""

from scheduler.topology.config.model import (
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
from scheduler.topology.config.topology_conf import DEFAULT_TOPOLOGY_NAME, parse_topology_conf
from scheduler.topology.config.topology_yaml import parse_topology_yaml

__all__ = [
    "DEFAULT_TOPOLOGY_NAME",
    "BlockConfig",
    "BlockDef",
    "Dims",
    "FlatConfig",
    "KindConfig",
    "NamedTopology",
    "RingConfig",
    "RingDef",
    "SwitchDef",
    "TopologySet",
    "Torus3dConfig",
    "TorusDef",
    "TorusPlacementShape",
    "TorusRegion",
    "TreeConfig",
    "parse_topology_conf",
    "parse_topology_yaml",
]
