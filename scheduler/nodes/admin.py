"""Operators' node requests: ``DrainNode`` and ``ResumeNode`` (Slurm's ``scontrol update node``).

- ``DrainNode(down=False)`` → ``NodeStateChanged(DRAIN, reason)``: its runs go on, no new work
  starts there (Slurm shows DRAINING, then DRAINED);
- ``DrainNode(down=True)`` → the node fails now (:func:`scheduler.nodes.failures.fail_node`): DOWN
  with the operator's reason, its runs end ``NODE_FAIL`` and are requeued as after any failure;
- ``ResumeNode`` → a DRAIN or DOWN node returns to service: ``NodeStateChanged(IDLE)``.

Both need an operator: the internal user "" (Sluice's own agents), ``root``, or a user listed in
``Operators``; anyone else gets ``JobRejected(AccessDenied)`` keyed by the node SLUID. An unknown
node name decides nothing; so does a request that changes nothing.
"""

from __future__ import annotations

from scheduler.jobs.rejected import rejected
from scheduler.nodes.failures import fail_node
from scheduler.records import DrainNode, Fact, NodeStateChanged, ResumeNode
from scheduler.shard.reasons import NodeState, RejectionReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["decide_drain", "decide_resume", "is_operator"]

SUPERUSER = "root"


def is_operator(state: ShardState, user: str) -> bool:
    """Sluice's agents (user ""), ``root`` and the configured ``Operators``."""
    return not user or user == SUPERUSER or user in state.config.scheduler.operators


def decide_drain(state: ShardState, req: DrainNode, st: Stamper) -> list[Fact]:
    """DrainNode → DRAIN (runs finish), or with ``down`` a node failure (runs end NODE_FAIL)."""
    sluid = state.node_sluid_by_name(req.name)
    node = state.nodes.get(sluid)
    if node is None:
        return []
    if not is_operator(state, req.user):
        return rejected(st, sluid, RejectionReason.ACCESS_DENIED, f"{req.user} may not drain")
    reason = req.reason or "Drained by an operator"
    by = req.by or req.user  # the verified operator; without authentication, the record's claim
    if req.down:
        if node.state == NodeState.DOWN and node.reason == reason:
            return []
        return fail_node(state, node, reason, st, by)
    if node.state == NodeState.DRAIN and node.reason == reason:
        return []
    return [
        NodeStateChanged(
            **st.meta(), node_sluid=sluid, name=node.name, state=NodeState.DRAIN, reason=reason,
            by=by,
        )
    ]


def decide_resume(state: ShardState, req: ResumeNode, st: Stamper) -> list[Fact]:
    """ResumeNode → a DRAIN or DOWN node back in service (``IDLE``; its runs make it MIXED or
    ALLOCATED, as everywhere, without an announcement)."""
    sluid = state.node_sluid_by_name(req.name)
    node = state.nodes.get(sluid)
    if node is None or node.state not in (NodeState.DOWN, NodeState.DRAIN):
        return []
    if not is_operator(state, req.user):
        return rejected(st, sluid, RejectionReason.ACCESS_DENIED, f"{req.user} may not resume")
    return [
        NodeStateChanged(**st.meta(), node_sluid=sluid, name=node.name, state=NodeState.IDLE)
    ]
