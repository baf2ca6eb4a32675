"""Pure availability checks and charging for hierarchical resources.

:class:`HresIndex` puts every layer on the cluster's node order (bool masks); usage is a
separate immutable value (:class:`HresUsage`), so a check is a function of (index, usage,
request, nodes) and charging returns a new usage plus the :class:`Charge` to release later.

- :func:`eligible_nodes`: Slurm's ``hres_filter`` for Modes 1 and 2 (Mode 3 is enforced
  node by node during placement, through :func:`~scheduler.resources.power.layered_budget`).
- :func:`can_run` / :func:`charge` / :func:`release`: a chosen node set against every layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

import numpy as np
from numpy.typing import NDArray

from scheduler.resources.hierarchy import Mode3Tree, mode3_tree
from scheduler.resources.model import INFINITE_COUNT, Mode, Resource, ResourcesConfig
from scheduler.resources.requests import LicenseSpec
from scheduler.topology.common.nodes import NodeTable

__all__ = [
    "Charge",
    "HresIndex",
    "HresUsage",
    "build_hres_index",
    "can_run",
    "charge",
    "eligible_nodes",
    "release",
]

BoolMask = NDArray[np.bool_]
_UNLIMITED: Final = INFINITE_COUNT


@dataclass(frozen=True, slots=True, eq=False)
class ResourceIndex:
    """One resource on the node order: layer masks, totals, Mode-1 charge order, tree."""

    resource: Resource
    masks: tuple[BoolMask, ...]
    totals: tuple[int, ...]
    mode1_order: tuple[int, ...]
    tree: Mode3Tree | None


@dataclass(frozen=True, slots=True, eq=False)
class HresIndex:
    """All resources over one node order (``nodes.names``)."""

    nodes: NodeTable
    resources: MappingProxyType[str, ResourceIndex]

    def get(self, name: str) -> ResourceIndex | None:
        """The resource's index, or ``None`` for a plain (non-hierarchical) license."""
        return self.resources.get(name)


@dataclass(frozen=True, slots=True)
class HresUsage:
    """Units in use per layer, per resource (sorted by resource name)."""

    used: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def of(self, name: str, layers: int) -> tuple[int, ...]:
        """Usage of one resource's layers (zeros when never charged)."""
        for resource, values in self.used:
            if resource == name:
                return values
        return (0,) * layers

    def with_usage(self, name: str, values: tuple[int, ...]) -> HresUsage:
        """A copy with one resource's usage replaced."""
        rest = [(n, v) for n, v in self.used if n != name]
        return HresUsage(tuple(sorted([*rest, (name, values)])))


@dataclass(frozen=True, slots=True)
class Charge:
    """What a job was charged: (resource, layer, units) entries; give it back to release."""

    entries: tuple[tuple[str, int, int], ...] = ()


def build_hres_index(config: ResourcesConfig, node_names: Sequence[str]) -> HresIndex:
    """Pure. Layer nodes absent from ``node_names`` are ignored (dynamic nodes unsupported)."""
    table = NodeTable.of(node_names)
    resources: dict[str, ResourceIndex] = {}
    for resource in config.resources:
        masks = tuple(
            table.mask(n for n in layer.nodes if n in table.position) for layer in resource.layers
        )
        tree = mode3_tree(resource.layers) if resource.mode is Mode.MODE_3 else None
        tree = tree if isinstance(tree, Mode3Tree) else None
        if tree is not None:
            totals = tree.capacity
        else:
            totals = tuple(_effective(layer.count, layer.base_usage) for layer in resource.layers)
        order = tuple(
            sorted(
                range(len(resource.layers)),
                key=lambda i: (-_sort_count(resource.layers[i].count), i),
            )
        )
        resources[resource.name] = ResourceIndex(resource, masks, totals, order, tree)
    return HresIndex(table, MappingProxyType(resources))


def _effective(count: int, base: int) -> int:
    return count if count == _UNLIMITED else count - base


def _sort_count(count: int) -> int:
    return np.iinfo(np.int64).max if count == _UNLIMITED else count


def _enough(total: int, used: int, amount: int) -> bool:
    return total == _UNLIMITED or used + amount <= total


def eligible_nodes(index: HresIndex, usage: HresUsage, spec: LicenseSpec) -> BoolMask:
    """Nodes where every Mode-1/2 request can be met (plain licenses are not filtered).

    Mode 1: a node is eligible if any layer holding it has enough. Mode 2: if at least one
    does and none holding it lacks enough. With ``a|b``, any one request suffices.
    """
    masks = []
    for item in spec.items:
        entry = index.get(item.name)
        if entry is None or entry.resource.mode is Mode.MODE_3:
            continue
        used = usage.of(item.name, len(entry.masks))
        enough = [_enough(t, u, item.count) for t, u in zip(entry.totals, used, strict=True)]
        allowed = np.zeros(index.nodes.size, dtype=bool)
        for mask, ok in zip(entry.masks, enough, strict=True):
            if ok:
                allowed |= mask
        if entry.resource.mode is Mode.MODE_2:
            for mask, ok in zip(entry.masks, enough, strict=True):
                if not ok:
                    allowed &= ~mask
        masks.append(allowed)
    if not masks:
        return np.ones(index.nodes.size, dtype=bool)
    combined = masks[0].copy()
    for mask in masks[1:]:
        combined = (combined | mask) if spec.any_of else (combined & mask)
    return combined


def _charges_for(
    entry: ResourceIndex, used: tuple[int, ...], amount: int, job: BoolMask
) -> list[tuple[int, int]] | None:
    """(layer, units) charged for one request on ``job`` nodes, or ``None`` if it cannot run."""
    overlapping = [i for i, mask in enumerate(entry.masks) if (mask & job).any()]
    mode = entry.resource.mode
    if mode is Mode.MODE_1:
        for layer in entry.mode1_order:
            if layer in overlapping and _enough(entry.totals[layer], used[layer], amount):
                return [(layer, amount)]
        return None
    if mode is Mode.MODE_2:
        if not overlapping:
            return None
        if all(_enough(entry.totals[i], used[i], amount) for i in overlapping):
            return [(i, amount) for i in overlapping]
        return None
    tree = entry.tree
    if (
        tree is None
        or (job & ~np.logical_or.reduce([entry.masks[leaf] for leaf in tree.leaves])).any()
    ):
        return None
    charges = [(i, amount * int((entry.masks[i] & job).sum())) for i in overlapping]
    if all(_enough(entry.totals[i], used[i], units) for i, units in charges):
        return charges
    return None


def _plan(
    index: HresIndex, usage: HresUsage, spec: LicenseSpec, job: BoolMask
) -> list[tuple[str, int, int]] | None:
    entries: list[tuple[str, int, int]] = []
    for item in spec.items:
        entry = index.get(item.name)
        if entry is None:
            continue
        used = usage.of(item.name, len(entry.masks))
        found = _charges_for(entry, used, item.count, job)
        if spec.any_of and found is not None:
            return [(item.name, layer, units) for layer, units in found]
        if not spec.any_of:
            if found is None:
                return None
            entries.extend((item.name, layer, units) for layer, units in found)
    if spec.any_of and any(index.get(i.name) is not None for i in spec.items):
        return None
    return entries


def can_run(index: HresIndex, usage: HresUsage, spec: LicenseSpec, nodes: Sequence[str]) -> bool:
    """Can a job asking ``spec`` run on ``nodes`` with the resources in use now?"""
    return _plan(index, usage, spec, index.nodes.mask(nodes)) is not None


def charge(
    index: HresIndex, usage: HresUsage, spec: LicenseSpec, nodes: Sequence[str]
) -> tuple[HresUsage, Charge] | None:
    """The usage after starting the job on ``nodes`` and what it was charged; ``None`` if
    the resources are not available."""
    plan = _plan(index, usage, spec, index.nodes.mask(nodes))
    if plan is None:
        return None
    entries = tuple(plan)
    return _apply(index, usage, entries, 1), Charge(entries)


def release(index: HresIndex, usage: HresUsage, charged: Charge) -> HresUsage:
    """The usage after the job's charge is given back."""
    return _apply(index, usage, charged.entries, -1)


def _apply(
    index: HresIndex, usage: HresUsage, entries: tuple[tuple[str, int, int], ...], sign: int
) -> HresUsage:
    for name in sorted({name for name, _, _ in entries}):
        entry = index.resources[name]
        values = list(usage.of(name, len(entry.masks)))
        for resource, layer, units in entries:
            if resource == name:
                values[layer] = max(0, values[layer] + sign * units)
        usage = usage.with_usage(name, tuple(values))
    return usage
