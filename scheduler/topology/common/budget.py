"""A Mode-3 hierarchical budget (e.g. power: PDU → rack → row → data centre) as seen by a
placement: per node, the layers from its leaf up to the root, and what each layer has left.

Slurm checks it node by node while selecting (``hres_select_check``): a node may join the
job only if every layer on its path still has ``per_node`` left, and then each of those
layers is tentatively charged. A node under no leaf layer cannot host the job. When the
hierarchy is mapped to a block topology (resources.yaml ``topology:``), each base block's
usable node count is also capped at ``leaf capacity // per_node`` before the block choice.

:class:`LayeredBudget` is the immutable input (built by :mod:`scheduler.resources`);
:class:`BudgetTracker` is the scratch copy one evaluation charges as it goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

__all__ = ["INFINITE", "BudgetTracker", "LayeredBudget"]

INFINITE: Final = int(np.iinfo(np.int64).max)
"""An unlimited layer (``count: -1``)."""


@dataclass(frozen=True, slots=True, eq=False)
class LayeredBudget:
    """``per_node`` units per job node, drawn from every layer on the node's path.

    ``node_leaf[i]`` is the leaf number of node ``i`` (index order) or -1; ``paths[leaf]``
    lists layer ids from the leaf to the root (padded with -1); ``available[layer]`` is what
    the layer has left (``INFINITE`` for no limit); ``topology`` names the block topology the
    hierarchy is mapped to, if any.
    """

    per_node: int
    node_leaf: NDArray[np.int32]
    paths: NDArray[np.int32]
    available: NDArray[np.int64]
    topology: str | None = None
    layer_names: tuple[str, ...] = ()

    def tracker(self) -> BudgetTracker:
        """A fresh scratch copy for one evaluation."""
        return BudgetTracker(self)


class BudgetTracker:
    """Tentative charges of one evaluation (local, mutable scratch; never escapes a call)."""

    def __init__(self, budget: LayeredBudget) -> None:
        self.budget = budget
        self.available = budget.available.copy()
        self.paths = [[int(layer) for layer in row if layer >= 0] for row in budget.paths]

    def take(self, node: int) -> bool:
        """Charge ``per_node`` on the node's path if every layer has it; else change nothing."""
        leaf = int(self.budget.node_leaf[node])
        if leaf < 0:
            return False
        need = self.budget.per_node
        path = self.paths[leaf]
        available = self.available
        for layer in path:
            if available[layer] != INFINITE and available[layer] < need:
                return False
        for layer in path:
            if available[layer] != INFINITE:
                available[layer] -= need
        return True

    def leaf_capacity(self, leaf: int) -> int:
        """Least amount left on the leaf's path (Slurm's ``hres_get_capacity``); 0 if none."""
        if leaf < 0:
            return 0
        return int(min(int(self.available[layer]) for layer in self.paths[leaf]))

    def node_cap(self, leaf: int) -> int:
        """How many more job nodes the leaf's path can take."""
        capacity = self.leaf_capacity(leaf)
        if self.budget.per_node <= 0 or capacity == INFINITE:
            return INFINITE
        return capacity // self.budget.per_node
