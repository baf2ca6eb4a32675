"""Asking a refused node to register again (Slurm's ``REQUEST_NODE_REGISTRATION_STATUS``).

A node daemon registers once when it starts. If the shard refuses that registration — a name
the configuration does not list (``NodeNotListed``, ``INVALID_REG`` "Node not in
configuration"), resources below the configured ones (``INVALID_REG`` "Low RealMemory…"), a
name still in service under another identity (``NodeIdentityChanged``), a credential that is no
node credential — the daemon goes on heartbeating and would never be in service until someone
restarted it, even once the cause is gone. slurmctld asks nodes to register again when the
configuration changes (``scontrol reconfigure``) and when nodes stop responding; so does the
shard, from its own facts:

- the node SLUIDs of refused registrations are remembered (``ShardMeta.refused_nodes``, the
  newest ``REFUSED_KEPT``; a node that registers is forgotten);
- a ``ConfigApplied`` of the cluster configuration, and a node going ``DOWN`` (the holder of a
  name may now be replaced), send each of them a ``RequestRegistration``: the daemon sends its
  ``RegisterNode`` again, which the shard decides as any other.

A registration under a SLUID that another node name holds (``NodeSluidInUse``: two daemons
minted the same SLUID, which happens when they start in the same millisecond, 1 in 512 times;
Slurm mints every id in slurmctld and has no such case) is not remembered: its
``RequestDenied`` sends at once a ``RequestRegistration`` naming the ``holder``; the daemon of
another name under that SLUID mints a new one and registers with it, the holder does nothing.

A registration refused as ``NodeIdentityChanged`` under the very SLUID of the node in service
(a daemon restarted with another credential — a node JWT instead of munge, another host's
munge — whose state directory kept its SLUID, e.g. one older than ``node.credential``) is
answered at once too: its heartbeats under that SLUID keep the node in service, so no ``DOWN``
would ever ask it again. The ``RequestRegistration`` names the holder (the node's own name) and
the refused identity (``refused``, the denial's ``requester``); only the daemon holding that
credential mints a new SLUID and registers again (``agents.node.identity.refused_is_mine``),
the node's registered daemon does nothing. Under its new SLUID it is refused as any other
identity while the old SLUID is in service: remembered, and asked again once the silent old
SLUID goes ``DOWN``. The command follows from the shard's own fact (signed like every node
command), so a registration forged by another identity moves no healthy daemon.

Nothing here loops: a registration refused again is remembered again and waits for the next
such fact (a new SLUID clashes again only by the same 1-in-512 chance). Sluice goes beyond
Slurm here in one way: a node the configuration did not list comes into service once an
``ApplyConfig`` lists it, without restarting its daemon.
"""

from __future__ import annotations

from scheduler.records import (
    ConfigApplied,
    Fact,
    NodeStateChanged,
    RequestDenied,
    RequestRegistration,
)
from scheduler.shard.reasons import NodeState
from scheduler.shard.state import ShardMeta, ShardState

__all__ = ["NODE_SLUID_IN_USE", "REFUSED_KEPT", "forget_refused", "registration_requests",
           "remember_refused"]

NODE_SLUID_IN_USE = "NodeSluidInUse"
"""The refusal of a registration under a SLUID another node name holds."""
NODE_IDENTITY_CHANGED = "NodeIdentityChanged"
"""The refusal of a registration of a name in service by another identity (authz)."""

REFUSED_KEPT = 64
"""Refused node SLUIDs remembered: a refused registration is rare, and a flood of them (forged
SLUIDs from a node credential) must not grow the shard's state or the commands a fact sends."""


def remember_refused(meta: ShardMeta, node_sluid: str) -> None:
    """Remember a node whose registration was refused (the newest last)."""
    if not node_sluid:
        return
    kept = (*(s for s in meta.refused_nodes if s != node_sluid), node_sluid)
    meta.refused_nodes = kept[-REFUSED_KEPT:]


def forget_refused(meta: ShardMeta, node_sluid: str) -> None:
    """A node registered: no need to ask it again."""
    if node_sluid in meta.refused_nodes:
        meta.refused_nodes = tuple(s for s in meta.refused_nodes if s != node_sluid)


def registration_requests(state: ShardState, fact: Fact) -> list[RequestRegistration]:
    """The ``RequestRegistration`` commands ``fact`` implies (``state`` is after it)."""
    if isinstance(fact, RequestDenied):
        holder = state.nodes.get(fact.subject_sluid)
        if holder is None or fact.request != "RegisterNode":
            return []
        if fact.reason == NODE_SLUID_IN_USE:
            return [RequestRegistration(node_sluid=fact.subject_sluid, reason=fact.detail,
                                        issued_ms=fact.time_ms, holder=holder.name)]
        if (fact.reason == NODE_IDENTITY_CHANGED and fact.requester
                and fact.requester != holder.registrant):
            return [RequestRegistration(node_sluid=fact.subject_sluid, reason=fact.detail,
                                        issued_ms=fact.time_ms, holder=holder.name,
                                        refused=fact.requester)]
        return []
    if isinstance(fact, ConfigApplied) and fact.kind == "cluster":
        reason = "the cluster configuration changed"
    elif isinstance(fact, NodeStateChanged) and fact.state == NodeState.DOWN:
        reason = "a node went down"  # one text: a batch's requests to a node are one command
    else:
        return []
    return [RequestRegistration(node_sluid=sluid, reason=reason, issued_ms=fact.time_ms)
            for sluid in state.meta.refused_nodes]
