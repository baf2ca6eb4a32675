"""topology/torus3d evaluation (Slurm 26.05 ``eval_nodes_torus3d.c``).

A segment (or the whole job) must be exactly one placement shape. For each torus in order,
each placement of that size, each anchor in order: the anchor is a candidate when all its
cells hold candidate nodes (and, without segments, all required nodes). The best candidate
has the lowest heaviest-node weight; within the same placement, the lowest fragmentation
cost (fully available anchors of the next larger placement it would break); across
placements, the torus with fewer idle nodes; otherwise the first found. Each segment is
chosen in turn and removed from the candidates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.common.budget import BudgetTracker
from scheduler.topology.common.evaluation import Action, Chosen, Failed
from scheduler.topology.common.types import BoolMask
from scheduler.topology.torus3d.record import PlacementRecord, TorusIndex

__all__ = ["Candidate", "best_anchor", "evaluate_torus"]

Indices = NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A placement at one anchor: weight, idle nodes in its torus, where it is."""

    weight: int
    idle: int
    torus: int
    placement: int
    anchor: int


def _placement_best(
    record: PlacementRecord,
    candidates: BoolMask,
    weights: NDArray[np.int64],
    required: BoolMask | None,
) -> tuple[int, int] | None:
    """(anchor, weight) of the lowest (weight, fragmentation cost) anchor, first on ties."""
    anchors = record.anchors
    safe = np.maximum(anchors, 0)
    valid = record.full & candidates[safe].all(axis=1)
    if required is not None:
        valid &= required[safe].sum(axis=1) == int(required.sum())
    if not valid.any():
        return None
    heaviest = np.where(valid, weights[safe].max(axis=1), np.iinfo(np.int64).max)
    lightest = int(heaviest.min())
    ties = np.flatnonzero(heaviest == lightest)
    if len(ties) > 1 and record.next_overlap is not None and record.next_anchors is not None:
        nxt = record.next_anchors
        available = np.asarray((candidates[np.maximum(nxt, 0)] | (nxt < 0)).all(axis=1), dtype=bool)
        cost = (record.next_overlap[ties] & available[None, :]).sum(axis=1)
        return int(ties[int(np.argmin(cost))]), lightest
    return int(ties[0]), lightest


def best_anchor(
    index: TorusIndex, size: int, candidates: BoolMask, required: BoolMask | None
) -> Candidate | None:
    """The best placement of ``size`` nodes over all toruses, or ``None``."""
    weights = index.nodes.weights
    best: Candidate | None = None
    for number, torus in enumerate(index.toruses):
        idle = int((candidates & (index.node_torus == number)).sum())
        for p, record in enumerate(torus.placements):
            if record.size != size:
                continue
            found = _placement_best(record, candidates, weights, required)
            if found is None:
                continue
            candidate = Candidate(found[1], idle, number, p, found[0])
            if (
                best is None
                or candidate.weight < best.weight
                or (candidate.weight == best.weight and candidate.idle < best.idle)
            ):
                best = candidate
    return best


def evaluate_torus(
    index: TorusIndex,
    size: int,
    count: int,
    candidates: BoolMask,
    required: BoolMask | None,
    tracker: BudgetTracker | None,
) -> Chosen | Failed:
    """``count`` placements of ``size`` nodes, chosen one after the other."""
    remaining = candidates.copy()
    groups: list[tuple[str, Indices]] = []
    overlap = False
    for _ in range(count):
        best = best_anchor(index, size, remaining, required)
        if best is None:
            if overlap:
                return Failed(
                    "ESLURM_TOPO_SEGMENT_NO_FIT",
                    Action.RETRY_HINT,
                    "the next segment finds no free placement",
                    ~remaining & candidates,
                )
            return Failed(
                "ESLURM_TOPO_NO_FIT", Action.BREAK, f"no free {size}-node placement on any torus"
            )
        torus = index.toruses[best.torus]
        record = torus.placements[best.placement]
        overlap = overlap or record.has_overlap
        members = record.anchors[best.anchor]
        if tracker is not None and not all(tracker.take(int(n)) for n in members):
            hint = np.zeros_like(candidates)
            hint[members] = True
            return Failed(
                "ESLURM_TOPO_INSUFFICIENT_RESOURCES",
                Action.RETRY_HINT,
                "a placement is over the power budget",
                hint,
            )
        remaining[members] = False
        groups.append((torus.name, members.astype(np.intp)))
    return Chosen(tuple(groups))
