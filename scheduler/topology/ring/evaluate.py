"""topology/ring evaluation (Slurm 26.05 ``eval_nodes_ring.c``).

Each segment is a window of ``segment`` consecutive ring positions (wrapping). For each
ring, every start is scanned; a window is valid when all its nodes are candidates; its score
is its heaviest node. A ring's best window has the lowest score (first start on ties). The
rings' best windows compete in a bounded heap of ``segment count`` entries, ordered by
(score, idle nodes in the ring): fewer idle nodes is better (best fit). At most one segment
per ring. The heap below reproduces Slurm's, ties included, so the same rings win.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import NDArray

from scheduler.topology.common.budget import BudgetTracker
from scheduler.topology.common.evaluation import Action, Chosen, Failed
from scheduler.topology.common.types import BoolMask
from scheduler.topology.ring.record import RingIndex

__all__ = ["Window", "best_windows", "evaluate_ring"]

Indices = NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class Window:
    """A ring's best window: heaviest node weight, idle nodes in the ring, ring, start."""

    weight: int
    idle: int
    ring: int
    start: int


def _worse(a: Window, b: Window) -> bool:
    return a.weight > b.weight or (a.weight == b.weight and a.idle > b.idle)


class _Heap:
    """Slurm's bounded max-heap of the worst kept window (array layout kept as is)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: list[Window] = []

    def push(self, window: Window) -> None:
        items = self.items
        if len(items) < self.size:
            items.append(window)
            position = len(items) - 1
            while position > 0 and _worse(window, items[(position - 1) // 2]):
                items[position] = items[(position - 1) // 2]
                position = (position - 1) // 2
            items[position] = window
            return
        worst = items[0]
        if _worse(window, worst) or (window.weight, window.idle) == (worst.weight, worst.idle):
            return
        items[0] = window
        position = 0
        while True:
            largest, left, right = position, 2 * position + 1, 2 * position + 2
            if left < len(items) and _worse(items[left], items[largest]):
                largest = left
            if right < len(items) and _worse(items[right], items[largest]):
                largest = right
            if largest == position:
                break
            items[position] = items[largest]
            position = largest
        items[position] = window


def best_windows(index: RingIndex, size: int, candidates: BoolMask) -> list[Window]:
    """Each ring's best valid window of ``size`` positions, rings in order."""
    if index.ring_count == 0 or size > index.positions.shape[1] // 2 or size < 1:
        return []
    positions = index.positions
    present = positions >= 0
    usable = candidates[np.maximum(positions, 0)] & present
    weights = index.nodes.weights[np.maximum(positions, 0)]
    widest = positions.shape[1] // 2
    valid = np.asarray(sliding_window_view(usable, size, axis=1).all(axis=2), dtype=bool)[
        :, :widest
    ]
    heaviest = sliding_window_view(weights, size, axis=1).max(axis=2)[:, :widest]
    idle = np.bincount(index.node_ring[candidates & index.covered], minlength=index.ring_count)
    ring_ok = (index.size >= size) & (idle >= size)
    valid &= (np.arange(widest)[None, :] < index.size[:, None]) & ring_ok[:, None]
    windows: list[Window] = []
    for ring in np.flatnonzero(valid.any(axis=1)):
        scores = np.where(valid[ring], heaviest[ring], np.iinfo(np.int64).max)
        start = int(np.argmin(scores))
        windows.append(Window(int(scores[start]), int(idle[ring]), int(ring), start))
    return windows


def evaluate_ring(
    index: RingIndex,
    size: int,
    count: int,
    candidates: BoolMask,
    tracker: BudgetTracker | None,
) -> Chosen | Failed:
    """``count`` segments of ``size`` nodes, each a window in a different ring."""
    heap = _Heap(count)
    for window in best_windows(index, size, candidates):
        heap.push(window)
    if len(heap.items) < count:
        return Failed(
            "ESLURM_TOPO_NO_FIT",
            Action.BREAK,
            f"{len(heap.items)} rings have a free window of {size}, {count} needed",
        )
    groups: list[tuple[str, Indices]] = []
    for window in sorted(heap.items, key=lambda w: w.ring):
        members = index.positions[window.ring, window.start : window.start + size]
        if tracker is not None and not all(tracker.take(int(n)) for n in members):
            hint = np.zeros_like(candidates)
            hint[members] = True
            return Failed(
                "ESLURM_TOPO_INSUFFICIENT_RESOURCES",
                Action.RETRY_HINT,
                "a window is over the power budget",
                hint,
            )
        groups.append((index.ring_names[window.ring], members.astype(np.intp)))
    return Chosen(tuple(groups))
