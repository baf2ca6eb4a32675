"""The node table every index carries: names in the index's order, their positions and
scheduling weights, and helpers to go between names and bool masks.

The order is the one the caller gives to ``build`` (use
:func:`~scheduler.topology.hostlist.natural_sorted` when there is no better one). Masks,
weights and placements all use it, so the caller can keep numpy arrays in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["NodeTable"]


def _frozen(array: NDArray[np.generic]) -> NDArray[np.generic]:
    array.flags.writeable = False
    return array


@dataclass(frozen=True, slots=True, eq=False)
class NodeTable:
    """Node names in index order, name → position, and per-node weights (Slurm ``Weight=``;
    lower is used first)."""

    names: tuple[str, ...]
    position: Mapping[str, int]
    weights: NDArray[np.int64]

    @classmethod
    def of(cls, names: Sequence[str], weights: Sequence[int] | None = None) -> NodeTable:
        """Build from names (no duplicates) and optional weights (default 0)."""
        position = {name: i for i, name in enumerate(names)}
        if len(position) != len(names):
            seen: set[str] = set()
            for name in names:
                if name in seen:
                    raise ValueError(f"node {name!r} is listed twice")
                seen.add(name)
        values = (
            np.zeros(len(names), dtype=np.int64)
            if weights is None
            else np.asarray(weights, dtype=np.int64)
        )
        if values.shape != (len(names),):
            raise ValueError("weights must have one value per node")
        return cls(tuple(names), position, _frozen(values.copy()))  # type: ignore[arg-type]

    @property
    def size(self) -> int:
        """Number of nodes."""
        return len(self.names)

    @property
    def uniform_weights(self) -> bool:
        """True when every node has the same weight (the fast path of every evaluator)."""
        return bool(self.size == 0 or (self.weights == self.weights[0]).all())

    def mask(self, names: Iterable[str]) -> NDArray[np.bool_]:
        """Bool mask of the given names; an unknown name is a ``KeyError``."""
        result = np.zeros(self.size, dtype=bool)
        index = [self.position[name] for name in names]
        result[index] = True
        return result

    def indices(self, names: Iterable[str]) -> NDArray[np.intp]:
        """Positions of the given names, in the order given."""
        return np.fromiter((self.position[name] for name in names), dtype=np.intp)

    def names_of(self, indices: Iterable[int] | NDArray[np.integer]) -> tuple[str, ...]:
        """Names at the given positions, in the order given."""
        names = self.names
        return tuple(names[int(i)] for i in indices)

    def with_weights(self, weights: Mapping[str, int]) -> NodeTable:
        """A copy with the named nodes' weights replaced (others keep theirs)."""
        values = self.weights.copy()
        for name, weight in sorted(weights.items()):
            values[self.position[name]] = weight
        return NodeTable(self.names, self.position, _frozen(values))  # type: ignore[arg-type]
