"""topology/tree evaluation (Slurm's ``_eval_nodes_topo``): fewest leaf switches.

1. Required nodes first; then the *top switch*: among switches with enough candidate
   nodes, the highest-level one whose lightest node is lightest (ties to the higher or
   later switch); with required nodes, the highest switch touching them.
2. Weight groups inside the top switch (lighter groups are mandatory).
3. Leaf switches holding mandatory nodes are filled first.
4. Greedy over the other leaf switches: the closest (sum of hops to the leaves already
   used) that fits, else by :func:`_compare` (both fit → fewer nodes; one fits → it;
   neither → walk up to the parents and compare there: more nodes, then lower level).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.common.budget import BudgetTracker
from scheduler.topology.common.evaluation import (
    Action,
    Chosen,
    Failed,
    split_by_weight,
    take_nodes,
)
from scheduler.topology.common.types import BoolMask
from scheduler.topology.tree.record import INFINITE_HOPS, TreeIndex

__all__ = ["TreeTask", "evaluate_tree"]

Indices = NDArray[np.intp]
Ints = NDArray[np.int64]


@dataclass(frozen=True, slots=True, eq=False)
class TreeTask:
    """``target`` nodes wanted (Slurm's ``req_nodes``), at least ``nodes_min``."""

    target: int
    nodes_min: int
    required: BoolMask | None = None
    free: BoolMask | None = None


@dataclass(slots=True, eq=False)
class _Fill:
    """Scratch state of one evaluation (local, never escapes)."""

    index: TreeIndex
    usable: BoolMask
    counts: Ints
    rem: int
    tracker: BudgetTracker | None
    taken: list[Indices] = field(default_factory=list)

    def take_from(self, switch: int) -> int:
        members = self.index.switch_nodes[switch]
        got = take_nodes(members[self.usable[members]], self.rem, self.tracker)
        self.usable[got] = False
        self.taken.append(got)
        self.rem -= len(got)
        return len(got)

    def decrement(self, count: int, switch: int) -> None:
        """Slurm's ``_decrement_node_cnt``: from the switch up to its root."""
        while switch >= 0:
            self.counts[switch] = max(0, int(self.counts[switch]) - count)
            switch = int(self.index.parent[switch])


def switch_counts(index: TreeIndex, mask: BoolMask) -> Ints:
    """Nodes of ``mask`` under each switch."""
    counts = np.bincount(
        index.node_leaf[mask & (index.node_leaf >= 0)], minlength=index.switch_count
    ).astype(np.int64)
    for switch in index.bottom_up:
        up = int(index.parent[switch])
        if up >= 0:
            counts[up] += counts[switch]
    return counts


def _lightest(index: TreeIndex, mask: BoolMask) -> Ints:
    lightest = np.full(index.switch_count, np.iinfo(np.int64).max, dtype=np.int64)
    placed = mask & (index.node_leaf >= 0)
    np.minimum.at(lightest, index.node_leaf[placed], index.nodes.weights[placed])
    for switch in index.bottom_up:
        up = int(index.parent[switch])
        if up >= 0:
            lightest[up] = min(lightest[up], lightest[switch])
    return lightest


def _top_switch(
    index: TreeIndex, candidates: BoolMask, required: BoolMask | None, need: int
) -> int:
    counts = switch_counts(index, candidates)
    uniform = index.nodes.uniform_weights
    lightest = None if uniform else _lightest(index, candidates)
    on_required = switch_counts(index, required) if required is not None else None
    top, top_weight = -1, 0
    for switch in range(index.switch_count):
        touches = on_required is not None and on_required[switch] > 0
        if touches and (top == -1 or index.level[switch] > index.level[top]):
            top = switch
        if counts[switch] < need or on_required is not None or counts[switch] == 0:
            continue
        weight = 0 if lightest is None else int(lightest[switch])
        if top == -1 or (index.level[switch] >= index.level[top] and weight <= top_weight):
            top, top_weight = switch, weight
    return top


def evaluate_tree(
    index: TreeIndex, task: TreeTask, candidates: BoolMask, tracker: BudgetTracker | None
) -> Chosen | Failed:
    """One evaluation; on success the nodes are grouped by leaf switch."""
    rem = task.target
    taken: list[Indices] = []
    required = task.required
    if required is not None:
        nodes = np.flatnonzero(required)
        if len(take_nodes(nodes, len(nodes), tracker)) < len(nodes):
            return Failed(
                "ESLURM_TOPO_REQ_NODES_NOT_AVAIL",
                Action.BREAK,
                "a required node is over the power budget",
            )
        taken.append(nodes)
        rem -= len(nodes)
    need = rem + task.nodes_min - task.target if task.target > task.nodes_min else rem
    top = _top_switch(index, candidates, required, need)
    if required is not None and (
        top < 0 or not np.isin(np.flatnonzero(required), index.switch_nodes[top]).all()
    ):
        return Failed.permanent(
            "ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE",
            "the required nodes do not share a network",
        )
    if top < 0:
        return Failed(
            "ESLURM_TOPO_INSUFFICIENT_RESOURCES",
            Action.BREAK,
            f"no switch reaches {need} usable nodes",
        )
    under_top = np.zeros_like(candidates)
    under_top[index.switch_nodes[top]] = True
    if rem <= 0:
        return _chosen(index, taken)
    pool = candidates & under_top & ~(required if required is not None else False)
    split = split_by_weight(
        index.nodes.weights, np.flatnonzero(pool), rem, index.nodes.uniform_weights, need
    )
    if split is None:
        return Failed(
            "ESLURM_TOPO_INSUFFICIENT_RESOURCES",
            Action.RETRY,
            f"fewer than {rem} usable nodes under switch {index.switch_names[top]}",
            candidates & under_top,
        )
    return _fill(index, task, split, taken, rem, tracker)


def _fill(
    index: TreeIndex,
    task: TreeTask,
    split: tuple[Indices, Indices],
    taken: list[Indices],
    rem: int,
    tracker: BudgetTracker | None,
) -> Chosen | Failed:
    best, mandatory = split
    usable = np.zeros(index.nodes.size, dtype=bool)
    usable[best] = True
    allocated = np.zeros_like(usable)
    for chunk in taken:
        allocated[chunk] = True
    charged = take_nodes(mandatory, len(mandatory), tracker)
    taken.append(charged)
    rem -= len(charged)
    allocated[charged] = True
    usable &= ~allocated
    if rem <= 0:
        return _chosen(index, taken)
    fill = _Fill(index, usable, switch_counts(index, usable | allocated), rem, tracker, taken)
    used = switch_counts(index, allocated) > 0
    taken_so_far = 0
    for switch in range(index.switch_count):
        if used[switch] and index.is_leaf(switch):
            taken_so_far += int(fill.take_from(switch))
            if fill.rem <= 0:
                return _chosen(index, fill.taken)
            fill.decrement(taken_so_far, switch)
    distance = np.zeros(index.switch_count, dtype=np.int64)
    for used_switch in np.flatnonzero(used):
        distance = _add_distance(index, distance, int(used_switch))
    frag = _frag_cost(index, task.free) if task.free is not None else None
    _greedy(index, fill, used, distance, frag)
    got = sum(len(chunk) for chunk in fill.taken)
    if got >= task.nodes_min:
        return _chosen(index, fill.taken)
    hint = np.zeros_like(usable)
    for chunk in fill.taken:
        hint[chunk] = True
    return Failed(
        "ESLURM_TOPO_INSUFFICIENT_RESOURCES",
        Action.RETRY_HINT,
        f"{got} of {task.nodes_min} nodes found under the top switch",
        hint,
    )


def _add_distance(index: TreeIndex, distance: Ints, switch: int) -> Ints:
    row = index.distance[switch]
    total = distance + row
    return np.where((distance >= INFINITE_HOPS) | (row >= INFINITE_HOPS), INFINITE_HOPS, total)


def _greedy(
    index: TreeIndex, fill: _Fill, used: NDArray[np.bool_], distance: Ints, frag: Ints | None
) -> None:
    leaves = [s for s in range(index.switch_count) if index.is_leaf(s) and not used[s]]
    previous = fill.rem + 1
    while previous != fill.rem and fill.rem > 0:
        previous = fill.rem
        best = -1
        for leaf in leaves:
            best = _better(index, fill, distance, frag, leaf, best)
        if best < 0:
            break
        distance = _add_distance(index, distance, best)
        fill.take_from(best)
        if fill.rem <= 0:
            return
        fill.decrement(int(fill.counts[best]), best)
        fill.counts[best] = 0


def _better(
    index: TreeIndex, fill: _Fill, distance: Ints, frag: Ints | None, leaf: int, best: int
) -> int:
    """Slurm's ``_topo_choose_best_switch`` for one candidate leaf."""
    counts = fill.counts
    if best < 0 or distance[leaf] >= INFINITE_HOPS or not counts[leaf]:
        return leaf if best < 0 and counts[leaf] and distance[leaf] < INFINITE_HOPS else best
    order, leaf_fits = _compare(index, counts, fill.rem, leaf, best)
    if (distance[leaf] < distance[best] and leaf_fits) or (
        distance[leaf] == distance[best] and order > 0
    ):
        return leaf
    if frag is not None and distance[leaf] == distance[best] and order == 0:
        return leaf if frag[leaf] < frag[best] else best
    return best


def _compare(index: TreeIndex, counts: Ints, rem: int, i: int, j: int) -> tuple[int, bool]:
    """Slurm's ``_topo_compare_switches``: (1 if i is the better fit, -1 if j, 0), and
    whether i fits at the level where the comparison ended."""
    while True:
        i_fit, j_fit = bool(counts[i] >= rem), bool(counts[j] >= rem)
        if i_fit and j_fit:
            if counts[i] != counts[j]:
                return (1 if counts[i] < counts[j] else -1), i_fit
            break
        if i_fit or j_fit:
            return (1 if i_fit else -1), i_fit
        up_i, up_j = int(index.parent[i]), int(index.parent[j])
        if up_i < 0 or up_j < 0 or up_i == up_j:
            break
        i, j = up_i, up_j
    if counts[i] != counts[j]:
        return (1 if counts[i] > counts[j] else -1), i_fit
    if index.level[i] != index.level[j]:
        return (1 if index.level[i] < index.level[j] else -1), i_fit
    return 0, i_fit


def _frag_cost(index: TreeIndex, free: BoolMask) -> Ints:
    """Per leaf: how many whole free switches (itself and its ancestors) using it breaks."""
    whole = switch_counts(index, free) == np.fromiter(
        (len(m) for m in index.switch_nodes), dtype=np.int64, count=index.switch_count
    )
    cost = np.zeros(index.switch_count, dtype=np.int64)
    for leaf in range(index.switch_count):
        switch = leaf
        while switch >= 0:
            cost[leaf] += int(whole[switch] and len(index.switch_nodes[switch]) > 0)
            switch = int(index.parent[switch])
    return cost


def _chosen(index: TreeIndex, taken: list[Indices]) -> Chosen:
    nodes = np.unique(np.concatenate(taken)) if taken else np.zeros(0, dtype=np.intp)
    leaves = index.node_leaf[nodes]
    groups = tuple(
        (index.switch_names[int(leaf)], nodes[leaves == leaf]) for leaf in np.unique(leaves)
    )
    return Chosen(groups)
