"""Deciding node requests: registration and failure.

Registration (``RegisterNode``):

- the config lists nodes and not this name, or the node reports fewer resources than
  configured → ``NodeStateChanged(INVALID_REG, reason)``; the node is not added;
- otherwise → ``NodeRegistered`` (configured resources win; on the embedded default cluster the
  reported ones, in every partition with ``Nodes: ALL``) and ``NodeStateChanged(IDLE)``;
- the same SLUID again with nothing changed → no fact (idempotent);
- the same name under a new SLUID → the old SLUID goes DOWN first (its runs fail).
  (``boot_ms`` is not in ``NodeRegistered``, so a restart under the same SLUID cannot be told
  apart on replay; the health agent's ``NodeFailed`` covers it.)

Failure (``NodeFailed``) → ``NodeStateChanged(DOWN)``, and for each run on the node, in job id
order: ``RunKillRequested(NODE_FAIL)`` to its other nodes and ``JobEnded(NODE_FAIL)``, then the
other nodes' new states. (Issue 4 will requeue instead of ending, here.)
"""

from __future__ import annotations

from scheduler.config import ClusterConfig, NodeConfig
from scheduler.decide_jobs import freed_nodes
from scheduler.facts import Fact, JobEnded, NodeRegistered, NodeStateChanged, RunKillRequested
from scheduler.model import Job, Node
from scheduler.occupancy import Occupancy
from scheduler.reasons import JobState, NodeState
from scheduler.requests import NodeFailed, RegisterNode
from scheduler.stamp import Stamper
from scheduler.state import ShardState

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
    """RegisterNode → NodeRegistered + NodeStateChanged(IDLE), or INVALID_REG, or nothing."""
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
    )
    facts: list[Fact] = []
    occupancy = Occupancy(state)
    previous = state.node_by_name.get(req.name, "")
    if previous and previous != req.node_sluid:
        facts += fail_node(
            state, state.nodes[previous], f"Re-registered as {req.node_sluid}", st, occupancy
        )
    known = state.nodes.get(req.node_sluid)
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
            )
        )
    if known is None or known.superseded or known.state not in NodeState.SCHEDULABLE:
        facts.append(
            NodeStateChanged(
                **st.meta(), node_sluid=node.node_sluid, name=node.name, state=NodeState.IDLE
            )
        )
    return facts


def _changed(known: Node, node: Node) -> bool:
    return (
        known.name,
        known.cpus,
        known.mem_mb,
        known.gpus,
        known.gpu_type,
        known.features,
        known.partitions,
    ) != (
        node.name,
        node.cpus,
        node.mem_mb,
        node.gpus,
        node.gpu_type,
        node.features,
        node.partitions,
    )


def decide_node_failed(state: ShardState, req: NodeFailed, st: Stamper) -> list[Fact]:
    """NodeFailed → the node goes DOWN and its runs end with NODE_FAIL."""
    node = state.nodes.get(req.node_sluid)
    if node is None or node.superseded or node.state == NodeState.DOWN:
        return []
    return fail_node(state, node, req.reason or "Not responding", st, Occupancy(state))


def fail_node(
    state: ShardState, node: Node, reason: str, st: Stamper, occupancy: Occupancy
) -> list[Fact]:
    """Take a node DOWN and end every run on it with NODE_FAIL."""
    facts: list[Fact] = [
        NodeStateChanged(
            **st.meta(),
            node_sluid=node.node_sluid,
            name=node.name,
            state=NodeState.DOWN,
            reason=reason,
        )
    ]
    occupancy.mark(node.name, NodeState.DOWN)
    return facts + _fail_runs(state, node, reason, st, occupancy)


def runs_on(state: ShardState, name: str) -> list[Job]:
    """The running jobs holding node ``name``, in job id order."""
    jobs = [state.jobs[s] for s in state.running if name in state.jobs[s].nodes]
    return sorted(jobs, key=lambda job: job.job_id)


def _fail_runs(
    state: ShardState, node: Node, reason: str, st: Stamper, occupancy: Occupancy
) -> list[Fact]:
    facts: list[Fact] = []
    for job in runs_on(state, node.name):
        others = tuple(n for n in job.nodes if n != node.name)
        if others:
            facts.append(
                RunKillRequested(
                    **st.meta(),
                    job_sluid=job.job_sluid,
                    run_sluid=job.run_sluid,
                    reason=JobState.NODE_FAIL,
                    nodes=others,
                )
            )
        facts.append(
            JobEnded(
                **st.meta(),
                job_sluid=job.job_sluid,
                job_id=job.job_id,
                run_sluid=job.run_sluid,
                state=JobState.NODE_FAIL,
                reason=reason,
            )
        )
        facts += freed_nodes(state, [job], st, occupancy)
    return facts
