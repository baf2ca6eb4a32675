"""topology/flat, the null plugin: no topology, take eligible nodes in order.

Slurm's flat plugin hands the job to ``common_topo_choose_nodes``; Sluice's version is the
plain rule underneath it: required nodes first, then the lightest nodes (``Weight=``), ties
in node order, up to ``nodes_max``. ``alpha_step_rank: true`` (26.05) ranks the chosen nodes
by name (:func:`rank`). ``--segment`` is ignored (as in Slurm) and ``--exclusive=topo`` is
refused.

:func:`first_fit` is the same rule for the common case with nothing else asked (no required
nodes, one weight, no budget): the scheduling pass places every job without a topology
through it, so the pass needs no first-fit of its own.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import yaml

from scheduler.topology.common.evaluation import Action, Chosen, Failed, Indices, take_nodes
from scheduler.topology.common.nodes import NodeTable
from scheduler.topology.common.placement import (
    as_availability,
    exclusive_unsupported,
    required_mask,
    required_unavailable,
    to_placement,
)
from scheduler.topology.common.types import (
    Availability,
    BoolMask,
    Placement,
    PlacementRequest,
    Unplaceable,
)
from scheduler.topology.config.model import FlatConfig, NamedTopology
from scheduler.topology.config.yaml_reader import YamlReader
from scheduler.topology.hostlist import natural_key

__all__ = ["FlatIndex", "FlatPlugin", "first_fit", "parse_yaml", "rank"]


@dataclass(frozen=True, slots=True, eq=False)
class FlatIndex:
    """A flat topology: just the node table."""

    name: str
    nodes: NodeTable
    alpha_step_rank: bool = False
    kind: ClassVar[str] = "flat"


class FlatPlugin:
    """The null plugin."""

    name = "flat"

    @staticmethod
    def parse_yaml(reader: YamlReader, node: yaml.Node, line: int) -> FlatConfig:
        """``flat: true`` or ``flat: {alpha_step_rank: bool}``."""
        return parse_yaml(reader, node, line)

    @staticmethod
    def validate(config: FlatConfig, filename: str, known: Collection[str] | None) -> None:
        """Nothing to check: a flat topology names no nodes."""

    def build(self, config: NamedTopology, node_names: Sequence[str]) -> FlatIndex:
        """Index over all cluster nodes."""
        alpha = config.config.alpha_step_rank if isinstance(config.config, FlatConfig) else False
        return FlatIndex(config.name, NodeTable.of(node_names), alpha)

    def place(
        self, index: FlatIndex, request: PlacementRequest, eligible: BoolMask | Availability
    ) -> Placement | Unplaceable:
        """Required nodes, then lightest-first in node order, up to ``nodes_max``."""
        availability = as_availability(eligible, index.nodes.size)
        if request.exclusive_topo:
            return exclusive_unsupported(self.name)
        required = required_mask(index.nodes, request)
        if isinstance(required, Unplaceable):
            return required
        if required is not None:
            if int(required.sum()) > request.max_nodes:
                return Unplaceable.bad_constraints(
                    "ESLURM_TOPO_MAX_NODE_LIMIT", "more required nodes than the job's node count"
                )
            unavailable = required_unavailable(required, availability.eligible)
            if unavailable is not None:
                return unavailable
        if required is None and availability.budget is None and index.nodes.uniform_weights:
            slots = first_fit(index, availability.eligible, request.nodes_min, request.max_nodes)
            if slots is None:
                return _too_few(int(availability.eligible.sum()), request).unplaceable()
            return to_placement(index.nodes, index.name, Chosen((("", slots),)))
        result = _evaluate(index, request, availability, required)
        if isinstance(result, Failed):
            return result.unplaceable()
        return to_placement(index.nodes, index.name, result)


def _evaluate(
    index: FlatIndex,
    request: PlacementRequest,
    availability: Availability,
    required: BoolMask | None,
) -> Chosen | Failed:
    candidates = availability.eligible
    tracker = availability.tracker()
    first = np.flatnonzero(required) if required is not None else np.zeros(0, dtype=np.intp)
    rest_mask = candidates & ~required if required is not None else candidates
    rest = np.flatnonzero(rest_mask)
    if not index.nodes.uniform_weights:
        rest = rest[np.argsort(index.nodes.weights[rest], kind="stable")]
    order = np.concatenate([first, rest]).astype(np.intp)
    taken = take_nodes(order, request.max_nodes, tracker)
    if required is not None and not np.isin(first, taken).all():
        return Failed(
            "ESLURM_TOPO_REQ_NODES_NOT_AVAIL",
            Action.BREAK,
            "a required node is over the power budget",
        )
    if len(taken) < request.nodes_min:
        return _too_few(len(taken), request)
    return Chosen((("", rank(index, np.sort(taken))),))


def first_fit(
    index: FlatIndex, eligible: BoolMask, nodes_min: int, nodes_max: int
) -> Indices | None:
    """The first ``nodes_max`` nodes of ``eligible`` in node order, ranked (:func:`rank`);
    None when fewer than ``nodes_min`` are eligible."""
    slots = eligible.nonzero()[0]  # np.flatnonzero without its wrapper (a 1-D mask)
    if len(slots) < nodes_min:
        return None
    return rank(index, slots[:nodes_max])


def rank(index: FlatIndex, slots: Indices) -> Indices:
    """The chosen nodes in rank order (the first is the batch host): node order, or by name
    (:func:`~scheduler.topology.hostlist.natural_key`) with ``alpha_step_rank``."""
    if not index.alpha_step_rank or len(slots) < 2:
        return slots
    names = index.nodes.names
    return np.asarray(
        sorted(slots.tolist(), key=lambda i: natural_key(names[i])), dtype=slots.dtype
    )


def _too_few(count: int, request: PlacementRequest) -> Failed:
    return Failed(
        "ESLURM_NODES_BUSY", Action.BREAK, f"{count} eligible nodes, {request.nodes_min} needed"
    )


def parse_yaml(reader: YamlReader, node: yaml.Node, line: int) -> FlatConfig:
    if isinstance(node, yaml.ScalarNode):
        if not reader.boolean(node, "flat"):
            reader.fail(node, "'flat: false' does not define a topology")
        return FlatConfig(False, line)
    pairs = reader.mapping(node, "flat")
    reader.check_keys(pairs, ("alpha_step_rank",), "flat")
    alpha = False
    for _, _, value in pairs:
        alpha = reader.boolean(value, "alpha_step_rank")
    return FlatConfig(alpha, line)
