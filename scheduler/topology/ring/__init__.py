"""topology/ring (26.05): rings of at most 16 nodes, one wrapping window per segment."""

from scheduler.topology.ring.plugin import RingPlugin
from scheduler.topology.ring.record import RingIndex, build_ring_index

__all__ = ["RingIndex", "RingPlugin", "build_ring_index"]
