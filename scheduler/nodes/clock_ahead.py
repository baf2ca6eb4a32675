"""Heartbeats that prove a node's clock runs ahead: the node is drained (``NodeClockAhead``).

A node daemon refuses a command whose signed expiry (the worker's clock at signing plus
``CommandTTL``) is past on its own clock, so a node whose clock runs ahead of the workers' by
more than ``CommandTTL`` refuses every command. ``scheduler.nodes.refused_launches`` drains it
at its first refused launch, but only if its report reaches the shard: with munge credentials
(made by the node's own clock) a host ahead by more than munged's TTL has its reports refused
as rewound, and a node already in service stayed a black hole.

Its heartbeats still count: the health agent (``agents.health_clock``) reads each one's
``time_ms`` against its arrival, and when several heartbeats in a row ran ahead by more than
``CommandTTL`` it sends ``NodeClockAhead`` (once per episode) into the node's shard, sealed as
the health agent (``agents.inbox_records``: no one else may send it; ``scheduler.access.authz``:
internal). :func:`decide_node_clock_ahead` decides from the record alone: the node is drained,
``"Clock skew: heartbeats N s ahead"`` (N: the record's ``ahead_ms`` in whole seconds), unless
it is DRAIN or DOWN already (an operator's reason stays; a repeat changes nothing), or unknown
or superseded (a daemon started again under a new SLUID). Nothing else: the runs on it end by
the existing paths (a refused launch, ``scheduler.nodes.missing_runs``).
"""

from __future__ import annotations

from scheduler.nodes.refused_launches import drain_skewed
from scheduler.records import Fact, NodeClockAhead
from scheduler.shard.reasons import NodeReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["decide_node_clock_ahead", "heartbeats_ahead_reason"]


def heartbeats_ahead_reason(ahead_ms: int) -> str:
    """The drain reason of a node whose heartbeats ran ``ahead_ms`` ahead of their arrival."""
    return f"{NodeReason.CLOCK_SKEW_HEARTBEATS} {max(0, ahead_ms) // 1000} s ahead"


def decide_node_clock_ahead(state: ShardState, req: NodeClockAhead, st: Stamper) -> list[Fact]:
    """NodeClockAhead → the node DRAIN (see the module), or nothing."""
    node = state.nodes.get(req.node_sluid)
    if node is None or node.superseded:
        return []
    return drain_skewed(node, heartbeats_ahead_reason(req.ahead_ms), st)
