"""A node's state as Slurm shows it, derived from its service state and the runs on it.

The ledger announces only a node's *service* state (``NodeStateChanged``: ``IDLE`` for in
service, ``DRAIN``, ``DOWN``, ``INVALID_REG``). Whether a node in service is ``IDLE``, ``MIXED``
or ``ALLOCATED`` follows from the runs that hold it, as slurmctld derives it from the job
allocations; announcing it would cost a record per node at every start and end (72 for one
NVL72 rack job) and say nothing the job facts do not.
"""

from __future__ import annotations

from scheduler.shard.reasons import NodeState
from scheduler.shard.state import ShardState

__all__ = ["allocation_state", "node_state"]


def allocation_state(njobs: int, free_cpus: int) -> str:
    """IDLE with no runs, ALLOCATED when no CPU is free, MIXED otherwise."""
    if njobs <= 0:
        return NodeState.IDLE
    if free_cpus <= 0:
        return NodeState.ALLOCATED
    return NodeState.MIXED


def node_state(state: ShardState, name: str) -> str:
    """``name``'s state: its service state unless in service, else IDLE, MIXED or ALLOCATED
    from the runs holding it (a COMPLETING job's held nodes count); "" for an unknown node."""
    node = state.nodes.get(state.node_by_name.get(name, ""))
    if node is None:
        return ""
    if node.state not in NodeState.SCHEDULABLE or node.superseded:
        return node.state
    index = state.index
    slot = index.pos.get(name)
    if slot is None:
        return node.state
    return allocation_state(int(index.njobs[slot]), int(index.free_cpus[slot]))
