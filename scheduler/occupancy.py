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

    def _get(self, name: str) -> tuple[int, int] | None:
        if name in self._counts:
            return self._counts[name]
        index = self._state.index
        i = index.pos.get(name)
        if i is None:
            return None
        return int(index.njobs[i]), int(index.free_cpus[i])

    def release(self, job: Job) -> list[tuple[str, str, str]]:
        """Free ``job``'s nodes; return (node SLUID, name, new state) where the state changes."""
        return self._change(job, -1)

    def allocate(self, job: Job) -> list[tuple[str, str, str]]:
        """Occupy ``job``'s nodes; return (node SLUID, name, new state) where it changes."""
        return self._change(job, +1)

    def _change(self, job: Job, sign: int) -> list[tuple[str, str, str]]:
        changes = []
        for name, (cpus, _mem, _gpus) in zip(job.nodes, job.alloc, strict=True):
            current = self._get(name)
            if current is None:
                continue
            njobs, free = current[0] + sign, current[1] - sign * cpus
            self._counts[name] = (njobs, free)
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
