"""Hierarchical resources (HRES, Slurm 25.05/25.11 ``resources.yaml``): parsed records.

A resource is a license-like counter attached to *layers* (node sets) of its own
hierarchy, independent of the network topology:

- ``MODE_1``: a job needs enough on **one** layer overlapping its nodes; it is charged once,
  on the first such layer by descending count.
- ``MODE_2``: a job needs enough on **every** layer overlapping its nodes, and each of them
  is charged.
- ``MODE_3``: a per-node amount summed upwards (chassis → rack → row → data centre); every
  layer on every job node's path must keep the total within its count (power capping).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

__all__ = [
    "INFINITE_COUNT",
    "MAX_HIERARCHY_DEPTH",
    "Layer",
    "Mode",
    "Resource",
    "ResourcesConfig",
    "Variable",
]

INFINITE_COUNT: Final = -1
"""``count: -1`` in resources.yaml: no limit."""

MAX_HIERARCHY_DEPTH: Final = 16


class Mode(Enum):
    """The planning mode of a resource."""

    MODE_1 = "MODE_1"
    MODE_2 = "MODE_2"
    MODE_3 = "MODE_3"


@dataclass(frozen=True, slots=True)
class Variable:
    """A named amount: a request alias (``full_node: 1000``) or a static base consumer."""

    name: str
    value: int


@dataclass(frozen=True, slots=True)
class Layer:
    """One layer: its nodes, its count (``INFINITE_COUNT`` = no limit), static base usage."""

    nodes: tuple[str, ...]
    count: int
    base: tuple[Variable, ...] = ()
    line: int = 0

    @property
    def base_usage(self) -> int:
        """Sum of this layer's own base consumers."""
        return sum(v.value for v in self.base)


@dataclass(frozen=True, slots=True)
class Resource:
    """One hierarchical resource (``- resource: <name>`` entry)."""

    name: str
    mode: Mode
    layers: tuple[Layer, ...]
    variables: tuple[Variable, ...] = ()
    topology: str | None = None
    line: int = 0

    def variable(self, name: str) -> int | None:
        """The value of a request alias, or ``None``."""
        for variable in self.variables:
            if variable.name == name:
                return variable.value
        return None


@dataclass(frozen=True, slots=True)
class ResourcesConfig:
    """All resources of a resources.yaml, in file order."""

    resources: tuple[Resource, ...]
    source: str = "resources.yaml"

    @property
    def names(self) -> tuple[str, ...]:
        """Resource names in file order."""
        return tuple(r.name for r in self.resources)

    def get(self, name: str) -> Resource:
        """The resource called ``name``; ``KeyError`` when there is none."""
        for resource in self.resources:
            if resource.name == name:
                return resource
        raise KeyError(name)
