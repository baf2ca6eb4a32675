"""The parsed topology configuration: plain frozen records, one per Slurm config item.

Every record keeps the 1-based ``line`` it came from, so later checks (an index built
against the cluster's node list) can still point at the file. Node lists are already
expanded, in the order written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final

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

MAX_RING_SIZE: Final = 16
MAX_SWITCH_NAME: Final = 64
MAX_BLOCK_LEVEL: Final = 15


@dataclass(frozen=True, slots=True)
class BlockDef:
    """One base block (``BlockName=``/``block:``); ``nodes`` empty = a placeholder gap."""

    name: str
    nodes: tuple[str, ...]
    line: int = 0


@dataclass(frozen=True, slots=True)
class BlockConfig:
    """topology/block: base blocks in file order and the optional ``BlockSizes``."""

    blocks: tuple[BlockDef, ...]
    block_sizes: tuple[int, ...] | None = None
    line: int = 0
    kind: ClassVar[str] = "block"


@dataclass(frozen=True, slots=True)
class SwitchDef:
    """One switch: a leaf has ``nodes``, an upper switch has ``children`` (switch names)."""

    name: str
    nodes: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    line: int = 0


@dataclass(frozen=True, slots=True)
class TreeConfig:
    """topology/tree: switches in file order."""

    switches: tuple[SwitchDef, ...]
    line: int = 0
    kind: ClassVar[str] = "tree"


@dataclass(frozen=True, slots=True)
class RingDef:
    """One ring: at most 16 nodes, in ring position order."""

    name: str
    nodes: tuple[str, ...]
    line: int = 0


@dataclass(frozen=True, slots=True)
class RingConfig:
    """topology/ring: rings in file order."""

    rings: tuple[RingDef, ...]
    line: int = 0
    kind: ClassVar[str] = "ring"


@dataclass(frozen=True, slots=True)
class Dims:
    """A 3-D size or coordinate."""

    x: int
    y: int
    z: int

    @property
    def volume(self) -> int:
        """x*y*z."""
        return self.x * self.y * self.z


@dataclass(frozen=True, slots=True)
class TorusRegion:
    """Nodes mapped x-major onto ``anchor .. anchor+dims-1`` (no wrap)."""

    anchor: Dims
    dims: Dims
    nodes: tuple[str, ...]
    line: int = 0


@dataclass(frozen=True, slots=True)
class TorusPlacementShape:
    """An allowed job shape; anchors on a grid ``anchor_seed + k*anchor_spacing`` (wraps)."""

    dims: Dims
    anchor_seed: Dims = Dims(0, 0, 0)
    anchor_spacing: Dims | None = None
    line: int = 0

    @property
    def spacing(self) -> Dims:
        """The anchor spacing; defaults to the shape's dims."""
        return self.anchor_spacing if self.anchor_spacing is not None else self.dims


@dataclass(frozen=True, slots=True)
class TorusDef:
    """One 3-D torus: ``nodes`` (x-major over the whole torus) or ``regions``."""

    name: str
    dims: Dims
    nodes: tuple[str, ...] = ()
    regions: tuple[TorusRegion, ...] = ()
    placements: tuple[TorusPlacementShape, ...] = ()
    line: int = 0


@dataclass(frozen=True, slots=True)
class Torus3dConfig:
    """topology/torus3d (topology.yaml only)."""

    toruses: tuple[TorusDef, ...]
    line: int = 0
    kind: ClassVar[str] = "torus3d"


@dataclass(frozen=True, slots=True)
class FlatConfig:
    """topology/flat, the null topology."""

    alpha_step_rank: bool = False
    line: int = 0
    kind: ClassVar[str] = "flat"


KindConfig = BlockConfig | TreeConfig | RingConfig | Torus3dConfig | FlatConfig
"""The configuration of exactly one topology kind."""


@dataclass(frozen=True, slots=True)
class NamedTopology:
    """One entry of topology.yaml (or the ``default`` made from topology.conf)."""

    name: str
    config: KindConfig
    cluster_default: bool = False
    line: int = 0

    @property
    def kind(self) -> str:
        """``tree``, ``block``, ``ring``, ``torus3d`` or ``flat``."""
        return self.config.kind


@dataclass(frozen=True, slots=True)
class TopologySet:
    """All topologies of a file, the cluster default first (Slurm's index 0)."""

    topologies: tuple[NamedTopology, ...]
    source: str = "topology.yaml"

    @property
    def default(self) -> NamedTopology:
        """The topology used by partitions without ``Topology=``."""
        return self.topologies[0]

    @property
    def names(self) -> tuple[str, ...]:
        """Topology names, default first, then file order."""
        return tuple(t.name for t in self.topologies)

    def get(self, name: str) -> NamedTopology:
        """The topology called ``name``; ``KeyError`` when there is none."""
        for topology in self.topologies:
            if topology.name == name:
                return topology
        raise KeyError(name)
