"""topology/tree plugin glue (Slurm's ``topology_tree.c``), including ``--switches=N@wait``.

After a successful evaluation the leaf switches used are counted. If there are more than
``switches`` and the job has waited less than ``switches_max_wait_s`` (Slurm's
``max_switch_wait``, 300 s), the target node count is lowered one by one within
``-N min-max`` and evaluated again; if even ``nodes_min`` needs too many switches the job
stays pending. Once the wait is over any allocation is accepted.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.topology.common.evaluation import Chosen, Evaluator, Failed, choose_nodes
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
from scheduler.topology.config.model import NamedTopology
from scheduler.topology.tree import config as tree_config
from scheduler.topology.tree.evaluate import TreeTask, evaluate_tree
from scheduler.topology.tree.record import TreeIndex, build_tree_index

__all__ = ["TreePlugin"]


class TreePlugin:
    """topology/tree."""

    name = "tree"
    parse_yaml = staticmethod(tree_config.parse_yaml)
    validate = staticmethod(tree_config.validate)

    def build(self, config: NamedTopology, node_names: Sequence[str]) -> TreeIndex:
        """Pure: the switch tree over ``node_names`` (in that order)."""
        return build_tree_index(config, node_names)

    def place(
        self, index: TreeIndex, request: PlacementRequest, eligible: BoolMask | Availability
    ) -> Placement | Unplaceable:
        """Fewest leaf switches, best fit (Slurm §2)."""
        availability = as_availability(eligible, index.nodes.size)
        if request.exclusive_topo:
            return exclusive_unsupported(self.name)
        required = required_mask(index.nodes, request)
        if isinstance(required, Unplaceable):
            return required
        candidates = availability.eligible & index.covered
        problem = _check_required(index, request, required, candidates)
        if problem is not None:
            return problem
        free = None
        if request.fragmentation_aware:
            free = (
                ~availability.busy if availability.busy is not None else availability.eligible
            ) & index.covered
        target = request.max_nodes
        while True:
            task = TreeTask(target, request.nodes_min, required, free)
            result = choose_nodes(
                _evaluator(index, task, availability),
                candidates,
                request.nodes_min,
                score=availability.score,
                protected=required,
            )
            if isinstance(result, Failed):
                return result.unplaceable()
            waiting = _waiting_for_switches(request, result)
            if not waiting:
                return to_placement(index.nodes, index.name, result)
            if target <= request.nodes_min:
                return Unplaceable.resources(
                    "WAIT_SWITCHES",
                    f"needs {len(result.groups)} leaf switches, asked for at most "
                    f"{request.switches}; waiting up to {request.switches_max_wait_s}s",
                )
            target -= 1


def _evaluator(index: TreeIndex, task: TreeTask, availability: Availability) -> Evaluator:
    def evaluate(current: BoolMask) -> Chosen | Failed:
        return evaluate_tree(index, task, current, availability.tracker())

    return evaluate


def _waiting_for_switches(request: PlacementRequest, result: Chosen) -> bool:
    if request.switches is None or request.switches <= 0:
        return False
    if request.waited_s >= request.switches_max_wait_s:
        return False
    return len(result.groups) > request.switches


def _check_required(
    index: TreeIndex, request: PlacementRequest, required: BoolMask | None, candidates: BoolMask
) -> Unplaceable | None:
    if required is None:
        return None
    if int(required.sum()) > request.max_nodes:
        return Unplaceable.bad_constraints(
            "ESLURM_TOPO_MAX_NODE_LIMIT", "more required nodes than job nodes"
        )
    if (required & ~index.covered).any():
        return Unplaceable.bad_constraints(
            "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE", "a required node is under no switch"
        )
    return required_unavailable(required, candidates)
