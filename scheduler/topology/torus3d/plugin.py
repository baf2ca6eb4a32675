"""topology/torus3d plugin glue (Slurm 26.05 ``topology_torus3d.c``): the job (or each
segment) must match a placement size exactly; ``--exclusive=topo`` is not supported."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.topology.common.placement import (
    as_availability,
    exclusive_unsupported,
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
from scheduler.topology.torus3d import config as torus3d_config
from scheduler.topology.torus3d.evaluate import evaluate_torus
from scheduler.topology.torus3d.record import TorusIndex, build_torus_index

__all__ = ["Torus3dPlugin"]


class Torus3dPlugin:
    """topology/torus3d."""

    name = "torus3d"
    parse_yaml = staticmethod(torus3d_config.parse_yaml)
    validate = staticmethod(torus3d_config.validate)

    def build(self, config: NamedTopology, node_names: Sequence[str]) -> TorusIndex:
        """Pure: the toruses over ``node_names`` (in that order)."""
        return build_torus_index(config, node_names)

    def place(
        self, index: TorusIndex, request: PlacementRequest, eligible: BoolMask | Availability
    ) -> Placement | Unplaceable:
        """One sub-cube placement per segment (Slurm §3)."""
        availability = as_availability(eligible, index.nodes.size)
        if request.exclusive_topo:
            return exclusive_unsupported(self.name)
        nodes = request.nodes_min
        segment = (
            request.segment if request.segment is not None and request.segment <= nodes else None
        )
        size = segment or nodes
        count = segment_count(nodes, size)
        if isinstance(count, Unplaceable):
            return count
        sizes = {p.size for t in index.toruses for p in t.placements}
        if size not in sizes:
            return Unplaceable.bad_constraints(
                "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE",
                f"no torus placement has exactly {size} nodes (sizes: "
                f"{', '.join(str(s) for s in sorted(sizes)) or 'none'})",
            )
        candidates = availability.eligible & index.covered
        required = required_mask(index.nodes, request)
        if isinstance(required, Unplaceable):
            return required
        if required is not None:
            problem = _check_required(index, request, required, candidates, count)
            if problem is not None:
                return problem
            if count > 1:
                candidates, required = candidates & required, None
        protected = required
        return search(
            index.nodes,
            index.name,
            lambda current: evaluate_torus(
                index, size, count, current, protected, availability.tracker()
            ),
            candidates,
            nodes,
            availability,
            protected,
        )


def _check_required(
    index: TorusIndex,
    request: PlacementRequest,
    required: BoolMask,
    candidates: BoolMask,
    count: int,
) -> Unplaceable | None:
    placed = index.covered.copy()
    for number, torus in enumerate(index.toruses):
        if not torus.placements:
            placed &= index.node_torus != number
    unavailable = required_unavailable(required, candidates)
    if unavailable is not None:
        return unavailable
    if (required & ~placed).any():
        return Unplaceable.bad_constraints(
            "ESLURM_TOPO_REQ_NODES_NO_MATCH_TOPO", "a required node is in no torus placement"
        )
    required_count = int(required.sum())
    if required_count > request.max_nodes or (count > 1 and request.nodes_min > required_count):
        return Unplaceable.bad_constraints(
            "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE",
            "the required nodes do not match the job size",
        )
    return None
