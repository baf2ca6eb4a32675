"""topology/flat, the null plugin: no topology, take eligible nodes in order.

Slurm's flat plugin hands the job to ``common_topo_choose_nodes``; Sluice's version is the
plain rule underneath it: required nodes first, then the lightest nodes (``Weight=``), ties
in node order, up to ``nodes_max``. ``alpha_step_rank: true`` (26.05) ranks the chosen nodes
by name. ``--segment`` is ignored (as in Slurm) and ``--exclusive=topo`` is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from scheduler.topology.common.evaluation import Action, Chosen, Failed, take_nodes
from scheduler.topology.common.nodes import NodeTable
from scheduler.topology.common.placement import as_availability, required_mask, to_placement
from scheduler.topology.common.types import (
    Availability,
    BoolMask,
    Placement,
    PlacementRequest,
    Unplaceable,
)
from scheduler.topology.config.model import FlatConfig, NamedTopology
from scheduler.topology.hostlist import natural_key

__all__ = ["FlatIndex", "FlatPlugin"]


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
            return Unplaceable.bad_constraints(
                "ESLURM_NOT_SUPPORTED", "topology/flat does not support --exclusive=topo"
            )
        required = required_mask(index.nodes, request)
        if isinstance(required, Unplaceable):
            return required
        if required is not None:
            if int(required.sum()) > request.max_nodes:
                return Unplaceable.bad_constraints(
                    "ESLURM_TOPO_MAX_NODE_LIMIT", "more required nodes than the job's node count"
                )
            if (required & ~availability.eligible).any():
                return Unplaceable.req_node_not_avail(
                    "ESLURM_TOPO_REQ_NODES_NOT_AVAIL", "a required node is not available now"
                )
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
    tracker = availability.budget.tracker() if availability.budget is not None else None
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
        return Failed(
            "ESLURM_NODES_BUSY",
            Action.BREAK,
            f"{len(taken)} eligible nodes, {request.nodes_min} needed",
        )
    taken = np.sort(taken)
    if index.alpha_step_rank:
        names = index.nodes.names
        taken = np.asarray(sorted(taken, key=lambda i: natural_key(names[i])), dtype=np.intp)
    return Chosen((("", taken),))
