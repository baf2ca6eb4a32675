"""topology/block plugin glue (Slurm's ``topology_block.c``): exclusive-topology filtering,
node-count ranges (``TopoMaxSizeUnroll``), the retry loop, and BLOCKED nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.topology.block import config as block_config
from scheduler.topology.block.record import BlockIndex, build_block_index
from scheduler.topology.block.segments import JobShape, evaluate_job, job_shape
from scheduler.topology.common.evaluation import Chosen, Failed, choose_nodes
from scheduler.topology.common.placement import (
    as_availability,
    exclusive_candidates,
    required_mask,
    to_placement,
)
from scheduler.topology.common.types import (
    Availability,
    BoolMask,
    Placement,
    PlacementRequest,
    Unplaceable,
)
from scheduler.topology.config.model import NamedTopology

__all__ = ["BlockPlugin", "job_sizes"]


def job_sizes(index: BlockIndex, request: PlacementRequest, available: int) -> list[int] | Failed:
    """Node counts to try, largest first.

    Without ``TopoMaxSizeUnroll`` block placement always uses ``nodes_min``. With it, a range
    narrower than the setting tries every size from the largest that the available nodes
    allow down to ``nodes_min``; a wider range is invalid.
    """
    low, high = request.nodes_min, request.max_nodes
    if high == low or index.max_size_unroll <= 0:
        return [low]
    if high - low >= index.max_size_unroll:
        return Failed.permanent(
            "ESLURM_INVALID_NODE_COUNT",
            f"node range {low}-{high} is wider than TopoMaxSizeUnroll={index.max_size_unroll}",
        )
    return list(range(max(min(high, available), low), low - 1, -1))


class BlockPlugin:
    """topology/block."""

    name = "block"
    parse_yaml = staticmethod(block_config.parse_yaml)
    validate = staticmethod(block_config.validate)

    def build(self, config: NamedTopology, node_names: Sequence[str]) -> BlockIndex:
        """Pure: the block index over ``node_names`` (in that order)."""
        return build_block_index(config, node_names)

    def place(
        self, index: BlockIndex, request: PlacementRequest, eligible: BoolMask | Availability
    ) -> Placement | Unplaceable:
        """Best-fit block placement with segments and exclusive topology (Slurm §1)."""
        availability = as_availability(eligible, index.nodes.size)
        required = required_mask(index.nodes, request)
        if isinstance(required, Unplaceable):
            return required
        units, unit_count = index.node_bblock, index.bblock_count
        candidates = exclusive_candidates(units, unit_count, availability, request.exclusive_topo)
        candidates &= index.covered
        sizes = job_sizes(index, request, int(candidates.sum()))
        if isinstance(sizes, Failed):
            return sizes.unplaceable()
        free = _free_nodes(index, availability) if request.fragmentation_aware else None
        first: Failed | None = None
        for size in sizes:
            shape = job_shape(request, size)
            if isinstance(shape, Failed):
                return shape.unplaceable()
            result = _place_size(index, request, shape, candidates, required, availability, free)
            if isinstance(result, Chosen):
                exclusive = request.exclusive_topo
                return to_placement(
                    index.nodes, index.name, result, units if exclusive else None, unit_count
                )
            if not result.retryable:
                return result.unplaceable()
            first = first or result
        assert first is not None
        return first.unplaceable()


def _place_size(
    index: BlockIndex,
    request: PlacementRequest,
    shape: JobShape,
    candidates: BoolMask,
    required: BoolMask | None,
    availability: Availability,
    free: BoolMask | None,
) -> Chosen | Failed:
    if shape.nodes > len(index.nodes.names) or shape.nodes > int(index.covered.sum()):
        return Failed.permanent(
            "ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE",
            f"the topology has fewer than {shape.nodes} nodes",
        )

    def evaluate(current: BoolMask) -> Chosen | Failed:
        return evaluate_job(index, request, shape, current, required, availability.budget, free)

    return choose_nodes(
        evaluate, candidates, shape.nodes, score=availability.score, protected=required
    )


def _free_nodes(index: BlockIndex, availability: Availability) -> BoolMask:
    """Nodes not in use (for the fragmentation-aware tie-break)."""
    if availability.busy is not None:
        return ~availability.busy & index.covered
    return availability.eligible & index.covered
