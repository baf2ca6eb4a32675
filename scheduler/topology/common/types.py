"""The values that go in and out of a topology plugin: request, availability, result.

- :class:`PlacementRequest` — one job's node count and topology options (sbatch names).
- :class:`Availability` — which nodes can host one node's share of the job now (a numpy
  bool mask in the index's node order), plus what ``--exclusive=topo`` and power capping
  need to know about the rest of the cluster.
- :class:`Placement` — the chosen nodes in rank order, their segments, and the nodes that
  become BLOCKED for a topo-exclusive job.
- :class:`Unplaceable` — a named reason (Slurm's pending reason), whether waiting can help,
  Slurm's error code, and a sentence. A job that does not fit is a value, not an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypeAlias

import numpy as np
from numpy.typing import NDArray

from scheduler.topology.common.budget import BudgetTracker, LayeredBudget

__all__ = [
    "DEFAULT_MAX_SWITCH_WAIT_S",
    "Availability",
    "BoolMask",
    "Placement",
    "PlacementRequest",
    "Segment",
    "Unplaceable",
    "UnplaceableReason",
]

BoolMask: TypeAlias = NDArray[np.bool_]
"""One bool per node, in the index's node order (``index.nodes.names``)."""

DEFAULT_MAX_SWITCH_WAIT_S: Final = 300
"""Slurm's ``SchedulerParameters=max_switch_wait`` default."""


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """What one job asks of the topology (sbatch option in brackets).

    ``nodes_min``/``nodes_max`` (``-N min-max``); ``segment`` (``--segment``);
    ``spread_segments``/``consolidate_segments`` (25.11 block options); ``exclusive_topo``
    (``--exclusive=topo``, or the partition has ``Exclusive=TOPO``); ``switches`` and
    ``switches_max_wait_s`` (``--switches=N@max-wait``, tree only) with ``waited_s``, how long
    the job has waited for its switches so far; ``required_nodes`` (``-w``).

    ``fragmentation_aware`` turns on Sluice's tie-break that keeps whole free blocks and
    switches (block and tree; off by default, see docs/topology.md).
    """

    nodes_min: int
    nodes_max: int | None = None
    segment: int | None = None
    spread_segments: bool = False
    consolidate_segments: bool = False
    exclusive_topo: bool = False
    switches: int | None = None
    switches_max_wait_s: int = DEFAULT_MAX_SWITCH_WAIT_S
    waited_s: int = 0
    required_nodes: tuple[str, ...] = ()
    fragmentation_aware: bool = False

    def __post_init__(self) -> None:
        if self.nodes_min < 1:
            raise ValueError(f"nodes_min must be >= 1, not {self.nodes_min}")
        if self.nodes_max is not None and self.nodes_max < self.nodes_min:
            raise ValueError(f"nodes_max {self.nodes_max} < nodes_min {self.nodes_min}")
        if self.segment is not None and self.segment < 1:
            raise ValueError(f"segment must be >= 1, not {self.segment}")
        if self.switches is not None and self.switches < 0:
            raise ValueError(f"switches must be >= 0, not {self.switches}")
        if self.waited_s < 0 or self.switches_max_wait_s < 0:
            raise ValueError("waited_s and switches_max_wait_s must not be negative")

    @property
    def max_nodes(self) -> int:
        """``nodes_max``, or ``nodes_min`` when no range was asked for."""
        return self.nodes_max if self.nodes_max is not None else self.nodes_min


@dataclass(frozen=True, slots=True, eq=False)
class Availability:
    """The cluster as one job sees it, all masks in the index's node order.

    - ``eligible``: the node can host one node's share of this job now (the caller checked
      state, CPUs, GPUs, memory, partition, features).
    - ``busy``: nodes running any job. Used when *this* job is topo-exclusive: it only gets
      units (base blocks, rings) with no busy node. ``None`` means "every ineligible node is
      busy", the safe reading.
    - ``exclusive_busy``: nodes held by running topo-exclusive jobs, including their BLOCKED
      nodes; their whole units are closed to every new job. ``None`` = none.
    - ``budget``: a Mode-3 hierarchical resource (power) the job draws per node.
    - ``score``: the retry order of Slurm's knapsack escape (``common_topo_choose_nodes``
      drops the poorest node first, e.g. CPUsxGPUs); ``None`` = all equal, lowest index first.
    """

    eligible: BoolMask
    busy: BoolMask | None = None
    exclusive_busy: BoolMask | None = None
    budget: LayeredBudget | None = None
    score: NDArray[np.int64] | None = None

    def tracker(self) -> BudgetTracker | None:
        """A fresh budget scratch copy for one evaluation; ``None`` without a budget."""
        return self.budget.tracker() if self.budget is not None else None


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment: its position in the job, the unit holding it, its nodes (rank order)."""

    index: int
    group: str
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a job runs: ``nodes`` in rank order (segment by segment), their ``indices`` in
    the index's node order, ``segments``, and ``blocked_nodes``: for a topo-exclusive job,
    the rest of its base blocks (or rings), which the caller marks BLOCKED."""

    nodes: tuple[str, ...]
    indices: tuple[int, ...]
    segments: tuple[Segment, ...]
    blocked_nodes: tuple[str, ...] = ()
    topology: str = ""


class UnplaceableReason:
    """Pending-reason names an :class:`Unplaceable` carries (Slurm's names)."""

    RESOURCES: Final = "Resources"
    """Not enough suitable nodes now; waiting can help."""
    BAD_CONSTRAINTS: Final = "BadConstraints"
    """The request can never be met by this topology (e.g. 30 nodes in segments of 9)."""
    REQ_NODE_NOT_AVAIL: Final = "ReqNodeNotAvail"
    """A node named with ``-w`` is not available now."""


@dataclass(frozen=True, slots=True)
class Unplaceable:
    """Why a job cannot be placed now: reason name, whether retrying can help, Slurm's error
    code (for audits), and a sentence."""

    reason: str
    retryable: bool
    code: str = ""
    detail: str = ""

    @classmethod
    def resources(cls, code: str, detail: str) -> Unplaceable:
        """Not enough now (retryable)."""
        return cls(UnplaceableReason.RESOURCES, True, code, detail)

    @classmethod
    def bad_constraints(cls, code: str, detail: str) -> Unplaceable:
        """Never placeable with this topology (permanent)."""
        return cls(UnplaceableReason.BAD_CONSTRAINTS, False, code, detail)

    @classmethod
    def req_node_not_avail(cls, code: str, detail: str) -> Unplaceable:
        """A required node is not available now (retryable)."""
        return cls(UnplaceableReason.REQ_NODE_NOT_AVAIL, True, code, detail)
