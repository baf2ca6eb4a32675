"""What all evaluators share: their result values, Slurm's retry loop, node weights, and
taking nodes under a budget.

An evaluator is a pure function ``candidates -> Chosen | Failed``. A failure says what the
retry loop (Slurm's ``common_topo_choose_nodes``) should try next:

- ``BREAK``: stop, nothing to gain;
- ``RETRY``: drop the ``hint`` nodes (e.g. a whole consolidation block) and evaluate again;
- ``RETRY_HINT``: drop the poorest node of ``hint`` (the partial allocation);
- ``RETRY_DEFAULT``: drop the poorest remaining node.

"Poorest" follows ``Availability.score`` (lowest first), then node order. Required nodes are
never dropped. Slurm's loop may run once per node; Sluice stops after
:data:`MAX_EVALUATIONS` evaluations so that one decision stays bounded (documented
deviation: a placement Slurm finds only after more retries is reported unplaceable now and
found on a later cycle once the cluster changes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.common.budget import BudgetTracker
from scheduler.topology.common.types import BoolMask, Unplaceable, UnplaceableReason

__all__ = [
    "MAX_EVALUATIONS",
    "Action",
    "Chosen",
    "Evaluator",
    "Failed",
    "choose_nodes",
    "split_by_weight",
    "take_nodes",
]

MAX_EVALUATIONS: Final = 64

Indices = NDArray[np.intp]


class Action(Enum):
    """What the retry loop does after a failed evaluation."""

    BREAK = "break"
    RETRY = "retry"
    RETRY_HINT = "retry_hint"
    RETRY_DEFAULT = "retry_default"


@dataclass(frozen=True, slots=True, eq=False)
class Chosen:
    """A successful evaluation: (group name, node indices in rank order) per segment."""

    groups: tuple[tuple[str, Indices], ...]

    @property
    def indices(self) -> Indices:
        """All chosen nodes, segment by segment."""
        if not self.groups:
            return np.zeros(0, dtype=np.intp)
        return np.concatenate([nodes for _, nodes in self.groups]).astype(np.intp)


@dataclass(frozen=True, slots=True, eq=False)
class Failed:
    """A failed evaluation: Slurm's error code, what to retry, and the pending reason."""

    code: str
    action: Action
    detail: str
    hint: BoolMask | None = None
    reason: str = UnplaceableReason.RESOURCES
    retryable: bool = True

    @classmethod
    def permanent(cls, code: str, detail: str) -> Failed:
        """The request can never fit this topology (``BadConstraints``)."""
        return cls(code, Action.BREAK, detail, None, UnplaceableReason.BAD_CONSTRAINTS, False)

    def unplaceable(self) -> Unplaceable:
        """The value handed to the caller."""
        return Unplaceable(self.reason, self.retryable, self.code, self.detail)


Evaluator = Callable[[BoolMask], "Chosen | Failed"]
"""One evaluation over a candidate mask."""


def choose_nodes(
    evaluate: Evaluator,
    candidates: BoolMask,
    nodes_min: int,
    *,
    score: NDArray[np.int64] | None = None,
    protected: BoolMask | None = None,
) -> Chosen | Failed:
    """Evaluate, then on failure drop nodes as the failure asks and evaluate again.

    Returns the first success, or the first failure when retrying cannot help.
    """
    first = evaluate(candidates)
    if isinstance(first, Chosen) or not first.retryable or first.action is Action.BREAK:
        return first
    current = candidates.copy()
    keep = protected if protected is not None else np.zeros_like(current)
    order = _retry_order(current & ~keep, score)
    cursor = 0
    result: Chosen | Failed = first
    for _ in range(MAX_EVALUATIONS - 1):
        assert isinstance(result, Failed)
        if result.action is Action.BREAK or int(current.sum()) <= nodes_min:
            break
        if result.action is Action.RETRY and result.hint is not None:
            current &= ~(result.hint & ~keep)
        else:
            hint = result.hint if result.action is Action.RETRY_HINT else None
            dropped, cursor = _drop_poorest(order, cursor, current, hint)
            if dropped < 0:
                break
            current[dropped] = False
        result = evaluate(current)
        if isinstance(result, Chosen):
            return result
    return first


def _retry_order(removable: BoolMask, score: NDArray[np.int64] | None) -> Indices:
    nodes = np.flatnonzero(removable)
    if score is None:
        return nodes
    return nodes[np.argsort(score[nodes], kind="stable")]


def _drop_poorest(
    order: Indices, cursor: int, current: BoolMask, hint: BoolMask | None
) -> tuple[int, int]:
    """(node to drop or -1, new cursor): the poorest node still present (and in ``hint``)."""
    while cursor < len(order) and not current[order[cursor]]:
        cursor += 1
    if hint is not None and hint.any():
        for position in range(cursor, len(order)):
            node = int(order[position])
            if current[node] and hint[node]:
                return node, cursor + 1 if position == cursor else cursor
        return -1, cursor
    if cursor >= len(order):
        return -1, cursor
    return int(order[cursor]), cursor + 1


def split_by_weight(
    weights: NDArray[np.int64],
    nodes: Indices,
    need: int,
    uniform: bool,
    enough: int | None = None,
) -> tuple[Indices, Indices] | None:
    """Slurm's weight groups: (usable nodes, mandatory nodes), or None if too few.

    Whole weight groups are added, lightest first, until ``need`` nodes are reached (or the
    groups run out); the groups before the last one added are mandatory, and heavier groups
    are not usable. Fewer than ``enough`` nodes (default ``need``) is a failure.
    """
    minimum = need if enough is None else enough
    if len(nodes) < minimum:
        return None
    if uniform or need <= 0 or len(nodes) == 0:
        return nodes, nodes[:0]
    node_weights = weights[nodes]
    distinct, counts = np.unique(node_weights, return_counts=True)
    last = min(int(np.searchsorted(np.cumsum(counts), need)), len(distinct) - 1)
    limit = distinct[last]
    return nodes[node_weights <= limit], nodes[node_weights < limit]


def take_nodes(nodes: Indices, count: int, tracker: BudgetTracker | None) -> Indices:
    """The first ``count`` of ``nodes`` (in order) that the budget accepts, charging it."""
    if count <= 0:
        return nodes[:0]
    if tracker is None:
        return nodes[:count]
    taken: list[int] = []
    for node in nodes:
        if tracker.take(int(node)):
            taken.append(int(node))
            if len(taken) == count:
                break
    return np.asarray(taken, dtype=np.intp)
