"""topology.yaml / topology.conf: parse text into frozen records (pure; the CLI reads files).

This package exports the records; the parsers are :mod:`.topology_yaml` and
:mod:`.topology_conf` (importing them here would make every plugin, which imports the
records, import the registry of plugins too).
"""

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

__all__ = [
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
]
