"""The one registry of topology kinds: kind name → plugin. ``flat`` is the null plugin.

Everything that needs the list of kinds reads it here: topology.yaml's keys and parsers
(each plugin's ``parse_yaml``), the per-kind checks (``validate``), building and placing. A
new kind is a package with its plugin, added to :data:`REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from scheduler.topology.block.plugin import BlockPlugin
from scheduler.topology.common.protocol import TopologyIndex, TopologyPlugin
from scheduler.topology.common.types import (
    Availability,
    BoolMask,
    Placement,
    PlacementRequest,
    Unplaceable,
)
from scheduler.topology.config.model import KindConfig, NamedTopology
from scheduler.topology.flat import FlatPlugin
from scheduler.topology.ring.plugin import RingPlugin
from scheduler.topology.torus3d.plugin import Torus3dPlugin
from scheduler.topology.tree.plugin import TreePlugin

__all__ = [
    "KINDS",
    "REGISTRY",
    "build_index",
    "eligible_mask",
    "place",
    "plugin_for",
    "validate_kind",
]

REGISTRY: Mapping[str, TopologyPlugin[Any]] = MappingProxyType(
    {
        "flat": FlatPlugin(),
        "tree": TreePlugin(),
        "block": BlockPlugin(),
        "ring": RingPlugin(),
        "torus3d": Torus3dPlugin(),
    }
)

KINDS: tuple[str, ...] = tuple(REGISTRY)
"""The kind names, in the registry's order."""


def plugin_for(kind: str) -> TopologyPlugin[Any]:
    """The plugin of a kind; ``KeyError`` for an unknown kind."""
    return REGISTRY[kind]


def build_index(topology: NamedTopology, node_names: Sequence[str]) -> TopologyIndex:
    """Pure: the index of one topology over ``node_names`` (in the order masks will use)."""
    index: TopologyIndex = plugin_for(topology.kind).build(topology, node_names)
    return index


def place(
    index: TopologyIndex, request: PlacementRequest, eligible: BoolMask | Availability
) -> Placement | Unplaceable:
    """Pure: dispatch to the plugin that built ``index``."""
    result: Placement | Unplaceable = plugin_for(index.kind).place(index, request, eligible)
    return result


def eligible_mask(index: TopologyIndex, names: Iterable[str]) -> BoolMask:
    """The bool mask (index order) of the named nodes; an unknown name is a ``KeyError``."""
    return index.nodes.mask(names)


def validate_kind(config: KindConfig, filename: str, known: Collection[str] | None) -> None:
    """Check one topology's records with its kind's checks; raise
    :class:`~scheduler.topology.errors.TopologyConfigError` at the first problem."""
    plugin_for(config.kind).validate(config, filename, known)
