"""topology/ring plugin glue (Slurm 26.05 ``topology_ring.c``): segment checks,
``--exclusive=topo`` with the ring as the unit, required nodes and the retry loop."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.topology.common.placement import (
    as_availability,
    exclusive_candidates,
    required_mask,
    required_unavailable,
    search,
    segment_count,
)
from scheduler.topology.common.types import (
    Availability,
    BoolMask,
    Placement,
    PlacementRequest,
    Unplaceable,
)
from scheduler.topology.config.model import NamedTopology
from scheduler.topology.ring import config as ring_config
from scheduler.topology.ring.evaluate import evaluate_ring
from scheduler.topology.ring.record import RingIndex, build_ring_index

__all__ = ["RingPlugin"]


class RingPlugin:
    """topology/ring."""

    name = "ring"
    parse_yaml = staticmethod(ring_config.parse_yaml)
    validate = staticmethod(ring_config.validate)

    def build(self, config: NamedTopology, node_names: Sequence[str]) -> RingIndex:
        """Pure: the rings over ``node_names`` (in that order)."""
        return build_ring_index(config, node_names)

    def place(
        self, index: RingIndex, request: PlacementRequest, eligible: BoolMask | Availability
    ) -> Placement | Unplaceable:
        """One window per segment, each in its own ring (Slurm §3)."""
        availability = as_availability(eligible, index.nodes.size)
        nodes = request.nodes_min
        size = request.segment if request.segment is not None else nodes
        count = segment_count(nodes, size)
        if isinstance(count, Unplaceable):
            return count
        if count > index.ring_count or size > int(index.size.max(initial=0)):
            return Unplaceable.bad_constraints(
                "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE",
                f"{count} segment(s) of {size} nodes need {count} ring(s) of at least {size}",
            )
        units, unit_count = index.node_ring, index.ring_count
        candidates = exclusive_candidates(units, unit_count, availability, request.exclusive_topo)
        candidates &= index.covered
        required = required_mask(index.nodes, request)
        if isinstance(required, Unplaceable):
            return required
        if required is not None:
            problem = _check_required(index, request, required, candidates)
            if problem is not None:
                return problem
            candidates &= required
        return search(
            index.nodes,
            index.name,
            lambda current: evaluate_ring(index, size, count, current, availability.tracker()),
            candidates,
            nodes,
            availability,
            required,
            units if request.exclusive_topo else None,
            unit_count,
        )


def _check_required(
    index: RingIndex, request: PlacementRequest, required: BoolMask, candidates: BoolMask
) -> Unplaceable | None:
    count = int(required.sum())
    if (required & ~index.covered).any():
        return Unplaceable.bad_constraints(
            "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE", "a required node is in no ring"
        )
    if count > request.max_nodes or request.nodes_min > count:
        return Unplaceable.bad_constraints(
            "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE",
            "with ring topology -w must list exactly the job's nodes",
        )
    return required_unavailable(required, candidates)
