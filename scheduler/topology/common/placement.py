"""Plugin glue shared by every kind: normalising the availability, required nodes and the
checks every kind makes on them, segment counts, ``--exclusive=topo`` unit widening, and the
search that turns an evaluation into a :class:`Placement` (:func:`search`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.common.evaluation import Chosen, Evaluator, Failed, choose_nodes
from scheduler.topology.common.nodes import NodeTable
from scheduler.topology.common.types import (
    Availability,
    BoolMask,
    Placement,
    PlacementRequest,
    Segment,
    Unplaceable,
)

__all__ = [
    "as_availability",
    "exclusive_candidates",
    "exclusive_unsupported",
    "required_mask",
    "required_unavailable",
    "search",
    "segment_count",
    "to_placement",
    "widen_to_units",
]

Units = NDArray[np.int32]
"""Per node, the id of its exclusive-topology unit (base block, ring) or -1."""


def as_availability(eligible: BoolMask | Availability, size: int) -> Availability:
    """Accept a bare mask or an :class:`Availability`; check every mask's length."""
    availability = eligible if isinstance(eligible, Availability) else Availability(eligible)
    for name in ("eligible", "busy", "exclusive_busy"):
        mask = getattr(availability, name)
        if mask is not None and (mask.shape != (size,) or mask.dtype != np.bool_):
            raise ValueError(f"{name} must be a bool array of {size} nodes, not {mask.shape}")
    return availability


def required_mask(nodes: NodeTable, request: PlacementRequest) -> BoolMask | Unplaceable | None:
    """``-w`` as a mask; ``None`` when not given; an unknown node can never be placed."""
    if not request.required_nodes:
        return None
    unknown = [n for n in request.required_nodes if n not in nodes.position]
    if unknown:
        return Unplaceable.bad_constraints(
            "ESLURM_INVALID_NODE_NAME", f"required node {unknown[0]!r} is not in this topology"
        )
    return nodes.mask(request.required_nodes)


def required_unavailable(required: BoolMask, candidates: BoolMask) -> Unplaceable | None:
    """A required node that cannot be used now (the job waits for it), else ``None``."""
    if (required & ~candidates).any():
        return Unplaceable.req_node_not_avail(
            "ESLURM_TOPO_REQ_NODES_NOT_AVAIL", "a required node is not available now"
        )
    return None


def exclusive_unsupported(kind: str) -> Unplaceable:
    """The refusal of ``--exclusive=topo`` by a kind without exclusive units."""
    return Unplaceable.bad_constraints(
        "ESLURM_NOT_SUPPORTED", f"topology/{kind} does not support --exclusive=topo"
    )


def segment_count(nodes: int, size: int) -> int | Unplaceable:
    """How many segments of ``size`` make ``nodes``; a remainder cannot be placed."""
    if nodes % size:
        return Unplaceable.bad_constraints(
            "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE",
            f"{nodes} nodes cannot be split into segments of {size}",
        )
    return nodes // size


def widen_to_units(units: Units, unit_count: int, mask: BoolMask) -> BoolMask:
    """Every node of every unit that contains a node of ``mask``."""
    touched = np.zeros(unit_count + 1, dtype=bool)
    touched[units[mask] + 1] = True
    touched[0] = False
    return touched[units + 1]


def exclusive_candidates(
    units: Units, unit_count: int, availability: Availability, exclusive_topo: bool
) -> BoolMask:
    """Eligible nodes left once topo-exclusive jobs' units are closed (Slurm's
    ``_block_by_topology``): units of running topo-exclusive jobs are closed to everyone; a
    topo-exclusive job also skips every unit with a busy node."""
    candidates = availability.eligible.copy()
    if availability.exclusive_busy is not None and availability.exclusive_busy.any():
        candidates &= ~widen_to_units(units, unit_count, availability.exclusive_busy)
    if exclusive_topo:
        busy = availability.busy if availability.busy is not None else ~availability.eligible
        candidates &= ~widen_to_units(units, unit_count, busy)
    return candidates


def to_placement(
    nodes: NodeTable,
    topology: str,
    chosen: Chosen,
    units: Units | None = None,
    unit_count: int = 0,
) -> Placement:
    """Build the :class:`Placement`; with ``units``, the rest of the job's units is BLOCKED."""
    indices = chosen.indices
    segments = tuple(
        Segment(i, group, nodes.names_of(members))
        for i, (group, members) in enumerate(chosen.groups)
    )
    blocked: tuple[str, ...] = ()
    if units is not None:
        allocated = np.zeros(nodes.size, dtype=bool)
        allocated[indices] = True
        blocked_mask = widen_to_units(units, unit_count, allocated) & ~allocated
        blocked = nodes.names_of(np.flatnonzero(blocked_mask))
    return Placement(
        nodes=nodes.names_of(indices),
        indices=tuple(int(i) for i in indices),
        segments=segments,
        blocked_nodes=blocked,
        topology=topology,
    )


def search(
    nodes: NodeTable,
    topology: str,
    evaluate: Evaluator,
    candidates: BoolMask,
    nodes_min: int,
    availability: Availability,
    required: BoolMask | None,
    units: Units | None = None,
    unit_count: int = 0,
) -> Placement | Unplaceable:
    """Evaluate ``candidates`` with Slurm's retry loop (required nodes never dropped) and turn
    the outcome into a :class:`Placement` (with ``units``, BLOCKED nodes) or the failure."""
    result = choose_nodes(
        evaluate, candidates, nodes_min, score=availability.score, protected=required
    )
    if isinstance(result, Failed):
        return result.unplaceable()
    return to_placement(nodes, topology, result, units, unit_count)
