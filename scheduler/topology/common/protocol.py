"""The topology plugin interface: a name, its configuration's parser and checks, a pure
``build`` and a pure ``place``.

Every kind (flat, tree, block, ring, torus3d) implements :class:`TopologyPlugin`; the
registry maps a kind name to its plugin, and a conformance test walks the registry.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

import yaml

from scheduler.topology.common.nodes import NodeTable
from scheduler.topology.common.types import (
    Availability,
    BoolMask,
    Placement,
    PlacementRequest,
    Unplaceable,
)
from scheduler.topology.config.model import KindConfig, NamedTopology
from scheduler.topology.config.yaml_reader import YamlReader

__all__ = ["IndexT", "TopologyIndex", "TopologyPlugin"]


@runtime_checkable
class TopologyIndex(Protocol):
    """What every index offers: its topology's name and kind, and the node table."""

    @property
    def name(self) -> str:
        """The topology's name (``default`` for topology.conf)."""
        ...

    @property
    def kind(self) -> str:
        """The plugin kind that built it."""
        ...

    @property
    def nodes(self) -> NodeTable:
        """Node names, positions and weights, in the order masks use."""
        ...


IndexT = TypeVar("IndexT", bound=TopologyIndex)


@runtime_checkable
class TopologyPlugin(Protocol[IndexT]):
    """One topology kind.

    ``build`` turns a parsed topology and the cluster's node names (in the order masks will
    use) into an immutable index. ``place`` chooses nodes for one job from the nodes that can
    host it now; it never mutates its inputs and returns the same answer for the same inputs.
    """

    @property
    def name(self) -> str:
        """The kind name: ``flat``, ``tree``, ``block``, ``ring`` or ``torus3d``."""
        ...

    def parse_yaml(self, reader: YamlReader, node: yaml.Node, line: int) -> KindConfig:
        """Pure: the kind's topology.yaml entry (the value under its key) as records."""
        ...

    def validate(self, config: Any, filename: str, known: Collection[str] | None) -> None:
        """Pure: raise ``TopologyConfigError`` at the first problem in the kind's records
        (``known``, when given, is the cluster's node names)."""
        ...

    def build(self, config: NamedTopology, node_names: Sequence[str]) -> IndexT:
        """Pure: the immutable index for one topology over these nodes."""
        ...

    def place(
        self, index: IndexT, request: PlacementRequest, eligible: BoolMask | Availability
    ) -> Placement | Unplaceable:
        """Pure: where the job runs now, or why it cannot."""
        ...
