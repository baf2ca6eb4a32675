"""topology/tree: leaf-switch best fit, fewest switches, ``--switches=N@max-wait``."""

from scheduler.topology.tree.plugin import TreePlugin
from scheduler.topology.tree.record import TreeIndex, build_tree_index

__all__ = ["TreeIndex", "TreePlugin", "build_tree_index"]
