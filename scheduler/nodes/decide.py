"""Deciding node requests: registration and failure.

Registration (``RegisterNode``):

- the config lists nodes and not this name, or the node reports fewer resources than
  configured → ``NodeStateChanged(INVALID_REG, reason)``; the node is not added;
- otherwise → ``NodeRegistered`` (configured resources win; on the embedded default cluster the
  reported ones, in every partition with ``Nodes: ALL``) and ``NodeStateChanged(IDLE)``;
- the same SLUID again with nothing changed → no fact (idempotent);
- the same SLUID while the shard still has runs on it (the daemon restarted: a node daemon
  registers once per start) → the node fails first with Slurm's ``Node unexpectedly rebooted``
  (:func:`scheduler.nodes.failures.fail_node`: its runs end ``NODE_FAIL`` and may be requeued) and
  stays DOWN: it is not reused in the same breath as the runs it lost; it returns when it registers
  again or is resumed;
- the same SLUID while requeues wait for its epilog → it will not report it (its daemon forgot
  the run): ``NodeEpilogCompleted(ok=True, detail="Node re-registered")`` for each;
- a DOWN node returns to service (``IDLE``) as ``ReturnToService`` says
  (:mod:`scheduler.nodes.return_to_service`; by default if it was DOWN for not responding or
  after an unexpected reboot); a DRAIN node, or one an operator took DOWN, stays until
  ``ResumeNode``;
- the same name under a new SLUID → the old SLUID fails first (its runs end ``NODE_FAIL``);
- a SLUID another name holds, unless that node is DOWN → ``RequestDenied(NodeSluidInUse)``,
  nothing else: two daemons minted the same SLUID (:mod:`scheduler.nodes.registration_requests`
  asks the newcomer for a new one); the holder is untouched.

Failure (``NodeFailed``) is :mod:`scheduler.nodes.failures`.
"""

from __future__ import annotations

from dataclasses import replace

from scheduler.config.cluster import ClusterConfig, NodeConfig
from scheduler.jobs.epilog import epilog_done
from scheduler.nodes.failures import (
    completing_on,
    decide_node_failed,
    fail_node,
    runs_on,
)
from scheduler.nodes.registration_requests import NODE_SLUID_IN_USE
from scheduler.nodes.return_to_service import returns_to_service
from scheduler.records import Fact, NodeRegistered, NodeStateChanged, RegisterNode, RequestDenied
from scheduler.shard.model import Node
from scheduler.shard.reasons import NodeReason, NodeState
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from scheduler.topology.hostlist import is_listable
from schemas.sluid import is_sluid

MAX_NODE_NAME = 253
"""The longest node name a registration may give (a DNS name's, a Kubernetes node's)."""

__all__ = ["decide_node_failed", "decide_register", "fail_node", "partitions_of"]

NOT_CONFIGURED = "Node is not in the cluster configuration"


def partitions_of(config: ClusterConfig, name: str) -> tuple[str, ...]:
    """The partitions a node belongs to, in configuration order."""
    listed = not config.nodes or config.node_named(name) is not None
    return tuple(
        p.name
        for p in config.partitions
        if (p.nodes is None and listed) or (p.nodes is not None and name in p.nodes)
    )


def _low_resource(req: RegisterNode, conf: NodeConfig) -> str:
    for what, reported, wanted in (
        ("CPUs", req.cpus, conf.cpus),
        ("RealMemory", req.mem_mb, conf.mem_mb),
        ("GPUs", req.gpus, conf.gpus),
    ):
        if reported < wanted:
            return f"Low {what} (reported {reported} < configured {wanted})"
    if conf.gpu_type and req.gpu_type and req.gpu_type != conf.gpu_type:
        return f"GPU type {req.gpu_type} differs from configured {conf.gpu_type}"
    return ""


def decide_register(state: ShardState, req: RegisterNode, st: Stamper) -> list[Fact]:
    """RegisterNode → NodeRegistered + NodeStateChanged(IDLE), or INVALID_REG, or nothing.

    A name that no host list can hold (a ``[``, ``]``, ``,``, white space, a control
    character) or longer than :data:`MAX_NODE_NAME` is refused: it reached every ``sinfo``
    and ``squeue`` of every user, whose host lists could not be written (``sluice nodes:
    name 'node[9' cannot be written in a host list``, red team; ``AuthNodeNames: [node*]``
    matched it)."""
    if not req.name.strip() or not is_sluid(req.node_sluid):
        return [RequestDenied(
            **st.meta(), request="RegisterNode", subject_sluid=req.node_sluid,
            reason="InvalidNodeRegistration",
            detail="a node registers with its name and a valid node SLUID",
        )]
    if (len(req.name) > MAX_NODE_NAME or not is_listable(req.name)
            or not req.name.isprintable()):
        return [RequestDenied(
            **st.meta(), request="RegisterNode", subject_sluid=req.node_sluid,
            requester=req.registrant, reason="InvalidNodeRegistration",
            detail=f"node name {req.name[:80]!r} cannot be a host name: at most "
                   f"{MAX_NODE_NAME} printable characters, no white space, '[', ']' or ','",
        )]
    holder = state.nodes.get(req.node_sluid)
    if (holder is not None and holder.name != req.name and not holder.superseded
            and holder.state != NodeState.DOWN):
        return [RequestDenied(
            **st.meta(), request="RegisterNode", subject_sluid=req.node_sluid,
            requester=req.registrant, reason=NODE_SLUID_IN_USE,
            detail=f"{req.node_sluid} is node {holder.name}'s SLUID: {req.name} registers "
                   "again under a new one",
        )]
    config = state.config
    conf = config.node_named(req.name) if config.nodes else None
    problem = NOT_CONFIGURED if config.nodes and conf is None else ""
    if conf is not None:
        problem = _low_resource(req, conf)
    if problem:
        return [
            NodeStateChanged(
                **st.meta(),
                node_sluid=req.node_sluid,
                name=req.name,
                state=NodeState.INVALID_REG,
                reason=problem,
            )
        ]
    source = conf or NodeConfig(
        req.name, req.cpus, req.mem_mb, req.gpus, req.gpu_type, req.features
    )
    node = Node(
        node_sluid=req.node_sluid,
        name=req.name,
        cpus=source.cpus,
        mem_mb=source.mem_mb,
        gpus=source.gpus,
        gpu_type=source.gpu_type,
        features=source.features or req.features,
        partitions=partitions_of(config, req.name),
        registrant=req.registrant,
    )
    facts: list[Fact] = []
    previous = state.node_by_name.get(req.name, "")
    if previous and previous != req.node_sluid:
        facts += fail_node(state, state.nodes[previous], f"Re-registered as {req.node_sluid}", st)
    known = state.nodes.get(req.node_sluid)
    rebooted = False
    if known is not None and not known.superseded:
        rebooted, again = _registered_again(state, known, req.boot_ms, st)
        facts += again
    if known is None or known.superseded or _changed(known, node):
        facts.append(
            NodeRegistered(
                **st.meta(),
                node_sluid=node.node_sluid,
                name=node.name,
                cpus=node.cpus,
                mem_mb=node.mem_mb,
                gpus=node.gpus,
                gpu_type=node.gpu_type,
                features=node.features,
                partitions=node.partitions,
                registrant=node.registrant,
            )
        )
    if (
        known is None
        or known.superseded
        or known.state == NodeState.UNKNOWN
        or (not rebooted and returns_to_service(config, known))
        or (rebooted and returns_to_service(config, _down_rebooted(known)))
    ):
        facts.append(
            NodeStateChanged(
                **st.meta(), node_sluid=node.node_sluid, name=node.name, state=NodeState.IDLE
            )
        )
    elif known is not None and known.suspect and not rebooted:
        facts.append(  # it answered: the suspicion ends, its state is announced again
            NodeStateChanged(
                **st.meta(), node_sluid=node.node_sluid, name=node.name,
                state=known.state, reason=known.reason,
            )
        )
    return facts


def _down_rebooted(node: Node) -> Node:
    """``node`` as the registration that found it rebooted leaves it: DOWN, ``REBOOTED``. The
    daemon registers once a start, so the same registration returns it when
    ``ReturnToService`` returns a rebooted node (1 and 2): its old runs were failed just
    before, and the new daemon killed what they left before registering. Before, it waited for
    a registration that never came: a daemon restarted within the node timeout left its node
    DOWN for good while it heartbeated (found by a helper, 2026-12-07)."""
    return replace(node, state=NodeState.DOWN, reason=NodeReason.REBOOTED)


def _changed(known: Node, node: Node) -> bool:
    return (
        known.name,
        known.cpus,
        known.mem_mb,
        known.gpus,
        known.gpu_type,
        known.features,
        known.partitions,
        known.registrant,
    ) != (
        node.name,
        node.cpus,
        node.mem_mb,
        node.gpus,
        node.gpu_type,
        node.features,
        node.partitions,
        node.registrant,
    )


def _registered_again(
    state: ShardState, node: Node, boot_ms: int, st: Stamper
) -> tuple[bool, list[Fact]]:
    """A known node registers again: fail what it ran; stop waiting for its epilogs.

    A run that started at or after the registration's ``boot_ms`` (the daemon's clock when it
    sent it) was launched to the daemon that registered, which reads its commands from where
    its predecessor stopped: it is not lost. The shard can place a job on a node between the
    daemon's restart and the shard's reading of its registration (a pass that runs first, as
    after a worker's own restart), and taking such a node DOWN as rebooted would need an
    administrator for nothing. Slurm likewise kills, at a registration, only the jobs that
    started before the node's boot time (less MessageTimeout + 5 s; ``_purge_missing_jobs``).
    A registration without ``boot_ms`` (0) is taken as a reboot, as before.
    """
    runs = runs_on(state, node.name)
    if any(not boot_ms or job.start_ms < boot_ms for job in runs):
        return True, fail_node(state, node, NodeReason.REBOOTED, st)
    facts: list[Fact] = []
    for job in completing_on(state, node.name):
        ref = (node.node_sluid, node.name)
        facts += epilog_done(state, job, ref, (True, "Node re-registered"), st)
    return False, facts
