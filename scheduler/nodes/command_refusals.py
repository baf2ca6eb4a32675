"""A node refused a node command (issue 13, signed launches): the refusal becomes a fact.

The node daemon checks every command it reads (signature, expiry, replay, target node;
``agents/auth/command_signature.py``) and reports a refusal with ``ReportCommandRefused``; the
shard that holds the node records it as ``NodeCommandRefused``. The command ran nothing; only a
``LaunchRun`` refused as expired while it was still fresh by the shard's own record time decides
more: the node's clock runs ahead, so the node is drained and the run ended and requeued
(``scheduler.nodes.refused_launches``). A report about a node this shard does not hold, or
naming another node than the one of that SLUID, is ignored.
"""

from __future__ import annotations

from scheduler.nodes.refused_launches import decide_refused_launch
from scheduler.records import Fact, NodeCommandRefused, ReportCommandRefused
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["decide_command_refused"]


def decide_command_refused(state: ShardState, req: ReportCommandRefused, st: Stamper,
                           ) -> list[Fact]:
    """ReportCommandRefused → one NodeCommandRefused fact for a node this shard holds, then
    what a fresh launch refused as expired decides (``decide_refused_launch``)."""
    node = state.nodes.get(req.node_sluid)
    if node is None or node.name != req.node_name:
        return []
    refused = NodeCommandRefused(**st.meta(), node_sluid=node.node_sluid, name=node.name,
                                 command=req.command, run_sluid=req.run_sluid,
                                 reason=req.reason, detail=req.detail)
    return [refused, *decide_refused_launch(state, node, req, st)]
