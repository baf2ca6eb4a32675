"""topology/torus3d (26.05, topology.yaml only): exact-size sub-cube placements."""

from scheduler.topology.torus3d.plugin import Torus3dPlugin
from scheduler.topology.torus3d.record import PlacementRecord, Torus, TorusIndex, build_torus_index

__all__ = ["PlacementRecord", "Torus", "Torus3dPlugin", "TorusIndex", "build_torus_index"]
