"""What a node's announced state becomes as runs start and end (IDLE, MIXED, ALLOCATED).

A :class:`Occupancy` is a scratch copy of the job counts and free CPUs of some nodes, so a
decision that starts or ends several runs can announce each node's state once it changes,
without touching the state (which only ``evolve`` writes).
"""

from __future__ import annotations

from scheduler.model import Job
from scheduler.reasons import NodeState
from scheduler.state import ShardState

__all__ = ["Occupancy", "allocation_state"]


def allocation_state(njobs: int, free_cpus: int) -> str:
    """IDLE with no runs, ALLOCATED when no CPU is free, MIXED otherwise."""
    if njobs <= 0:
        return NodeState.IDLE
    if free_cpus <= 0:
        return NodeState.ALLOCATED
    return NodeState.MIXED


class Occupancy:
    """Scratch job counts and free CPUs per node name, seeded from the state's index."""

    __slots__ = ("_announced", "_counts", "_state")

    def __init__(self, state: ShardState) -> None:
        self._state = state
        self._counts: dict[str, tuple[int, int]] = {}
        self._announced: dict[str, str] = {}

    def release(self, job: Job) -> list[tuple[str, str, str]]:
        """Free ``job``'s nodes; return (node SLUID, name, new state) where the state changes."""
        return self._change(job, -1)

    def allocate(self, job: Job) -> list[tuple[str, str, str]]:
        """Occupy ``job``'s nodes; return (node SLUID, name, new state) where it changes."""
        return self._change(job, +1)

    def _change(self, job: Job, sign: int) -> list[tuple[str, str, str]]:
        index, counts = self._state.index, self._counts
        pos = index.pos
        names = [n for n in job.nodes if n in pos]
        fresh = [n for n in names if n not in counts]
        if fresh:
            slots = [pos[n] for n in fresh]
            njobs, cpus = index.njobs[slots].tolist(), index.free_cpus[slots].tolist()
            counts.update(zip(fresh, zip(njobs, cpus, strict=True), strict=True))
        changes = []
        alloc = dict(zip(job.nodes, job.alloc, strict=True))
        for name in names:
            njobs, free = counts[name]
            njobs, free = njobs + sign, free - sign * alloc[name][0]
            counts[name] = (njobs, free)
            changes.extend(self._announce(name, allocation_state(njobs, free)))
        return changes

    def _announce(self, name: str, wanted: str) -> list[tuple[str, str, str]]:
        sluid = self._state.node_by_name.get(name, "")
        node = self._state.nodes.get(sluid)
        announced = self._announced.get(name, node.state if node else "")
        if node is None or announced not in NodeState.SCHEDULABLE or announced == wanted:
            return []
        self._announced[name] = wanted
        return [(sluid, name, wanted)]

    def mark(self, name: str, announced: str) -> None:
        """Record that ``name`` was just announced in ``announced`` (e.g. DOWN)."""
        self._announced[name] = announced
