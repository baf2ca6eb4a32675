"""When a DOWN node returns to service, and when a silence is a suspected partition.

**ReturnToService** (``NodeHealthConfig.return_to_service``, Slurm's key):

- 0: a DOWN node stays DOWN until an operator resumes it (``ResumeNode``);
- 1 (default): a node DOWN for not responding (reason ``Not responding…``) returns when it
  answers again; so does one DOWN for an unexpected reboot once it registers again (Sluice's
  rule since before this key, kept);
- 2: a DOWN node returns whatever the reason, unless an operator set it DOWN
  (``DrainNode(down=True)``, whose reason is the operator's own text).

"Answers again" is a ``RegisterNode`` (the daemon started again) or a ``NodeResponding`` (the
health agent hears the node's heartbeat again after a silence). A ``NodeResponding`` is a
*valid registration* when the node is still in the configuration (a listed cluster must still
list it); its resources were checked when it registered and a change of them restarts the
daemon, which registers. Nothing of a DOWN node's old runs comes back: they ended
``NODE_FAIL`` when it went DOWN, and the same facts sent ``KillRun`` (``TERMINATE``) to the node's
command partition, which the returning daemon reads before anything newer. A run its heartbeat
still reports that the shard does not hold on it gets a ``RunKillRequested`` to that node alone.
The same heartbeat decides the runs the shard holds on the node that it no longer lists
(:mod:`scheduler.nodes.missing_runs`); the health agent forwards heartbeats for that too, not
only after a silence.

**Suspected partition** (``NodeFailureGuardShare``): a ``NodeFailed`` counted in a check where
``silent_nodes`` ≥ 2 and ``silent_nodes > share * watched_nodes`` does not fail the node:
``NodeSuspected`` instead (its runs go on, no new work starts there) until it answers
(``NodeStateChanged`` re-announcing its state), a later ``NodeFailed`` under the share takes it
DOWN, or an operator does (``sluice nodes confirm-down``, ``sluice drain --down``).

**A paused node** (``NodeResponding.paused``: its daemon takes no commands because its state
directory is full or read-only, docs/operations.md): ``NodeSuspected`` with the reason
``State directory <problem>: commands paused`` (no new work starts there, its runs go on, it is
not drained: the daemon resumes by itself once the directory takes writes, as the worker and
the views do), ended (``NodeStateChanged`` re-announcing its state) by the first forwarded
heartbeat that no longer says so. Slurm has no such pause: a slurmd that cannot write its spool
fails the launches sent to it, and the controller drains the node for each failure until an
operator resumes it; here nothing is sent to fail meanwhile.
"""

from __future__ import annotations

from scheduler.config.model import ClusterConfig
from scheduler.nodes.missing_runs import decide_missing_runs, jobs_on
from scheduler.records import (
    Fact,
    NodeFailed,
    NodeResponding,
    NodeStateChanged,
    NodeSuspected,
    RunKillRequested,
)
from scheduler.shard.model import Job, Node
from scheduler.shard.reasons import NodeReason, NodeState
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = [
    "SYSTEM_DOWN_REASONS",
    "decide_node_responding",
    "is_suspected_partition",
    "paused_reason",
    "returns_to_service",
    "suspect_node",
]

SYSTEM_DOWN_REASONS = NodeReason.SYSTEM_DOWN
"""The starts of the reasons Sluice itself takes a node DOWN with; any other is an operator's."""

STALE_RUN = "TERMINATE"
"""The kill reason for a run a returning node still holds that the shard does not."""


def _down_by_system(node: Node) -> bool:
    return node.reason.startswith(SYSTEM_DOWN_REASONS)


def returns_to_service(config: ClusterConfig, node: Node) -> bool:
    """Whether a DOWN ``node`` that answers again returns to service (see the module)."""
    if node.state != NodeState.DOWN:
        return False
    mode = config.health.return_to_service
    if mode == 0:
        return False
    if mode == 1:
        return node.reason.startswith((NodeReason.NOT_RESPONDING, NodeReason.REBOOTED))
    return _down_by_system(node)


def _still_configured(config: ClusterConfig, node: Node) -> bool:
    return not config.nodes or config.node_named(node.name) is not None


def decide_node_responding(
    state: ShardState, req: NodeResponding, st: Stamper
) -> list[Fact]:
    """NodeResponding → back in service, or the end of a suspicion (when the node answers
    again), runs missing from the node ended, and kills of stale runs."""
    node = state.nodes.get(req.node_sluid)
    if node is None or node.superseded or node.name != req.name:
        return []
    facts: list[Fact] = []
    pause = paused_reason(req.paused)
    service = node.state
    if not req.answers:
        pass  # forwarded for its runs only: its service is decided when it answers again
    elif returns_to_service(state.config, node) and _still_configured(state.config, node):
        service = NodeState.IDLE
        facts.append(_announce(st, node, NodeState.IDLE, ""))
    elif node.suspect and not pause:
        facts.append(_announce(st, node, node.state, node.reason))
    if pause and service != NodeState.DOWN and (node.suspect != pause or facts):
        facts.append(NodeSuspected(**st.meta(), node_sluid=node.node_sluid, name=node.name,
                                   reason=pause, silent_nodes=0, watched_nodes=0))
    elif (not pause and not req.answers
          and node.suspect.startswith(NodeReason.STATE_DIR_PAUSED)):
        facts.append(_announce(st, node, node.state, node.reason))  # takes commands again
    held = jobs_on(state, node.name)
    facts += decide_missing_runs(state, node, req, st, held)  # in the state before these facts
    # a run the node still lists, or whose end report it still waits on an answer for
    return facts + _stale_kills(state, node, (*req.runs, *req.exited), held, st)


def paused_reason(paused: str) -> str:
    """A paused node's suspicion (see the module), or "" when ``paused`` is "" (it is not)."""
    return f"{NodeReason.STATE_DIR_PAUSED}{paused}: commands paused" if paused else ""


def _announce(st: Stamper, node: Node, service: str, reason: str) -> NodeStateChanged:
    return NodeStateChanged(
        **st.meta(), node_sluid=node.node_sluid, name=node.name, state=service, reason=reason
    )


def _run_jobs(state: ShardState) -> dict[str, Job]:
    """Every run SLUID the shard remembers (current and previous), with its job."""
    jobs: dict[str, Job] = {}
    for job in state.jobs.values():
        if job.previous_run_sluid:
            jobs[job.previous_run_sluid] = job
        if job.run_sluid:
            jobs[job.run_sluid] = job
    return jobs


def _stale_kills(
    state: ShardState, node: Node, runs: tuple[str, ...], jobs: list[Job], st: Stamper
) -> list[Fact]:
    if not runs or {job.run_sluid for job in jobs}.issuperset(runs):
        return []  # the usual case: no scan of every job the shard remembers
    known = _run_jobs(state)
    facts: list[Fact] = []
    for run in sorted(set(runs)):
        job = known.get(run)
        if job is None:
            continue  # purged long ago, or another shard's: nothing to name it by
        if job.run_sluid == run and (job.is_running or job.is_completing):
            continue  # the shard still holds it (here, or elsewhere after a hot swap)
        facts.append(
            RunKillRequested(
                **st.meta(),
                job_sluid=job.job_sluid,
                run_sluid=run,
                reason=STALE_RUN,
                nodes=(node.name,),
            )
        )
    return facts


def is_suspected_partition(config: ClusterConfig, req: NodeFailed) -> bool:
    """More than the guard share of the watched nodes, and at least 2, silent at once."""
    silent, watched = req.silent_nodes, req.watched_nodes
    share: float = config.health.failure_guard_share
    return watched > 0 and silent >= 2 and silent > share * watched


def suspect_node(node: Node, req: NodeFailed, st: Stamper) -> list[Fact]:
    """``NodeSuspected`` for a node silent in a suspected partition (once per suspicion)."""
    if node.suspect:
        return []
    reason = (
        f"Suspected partition: {req.silent_nodes} of {req.watched_nodes} nodes silent at once"
        f" ({req.reason or NodeReason.NOT_RESPONDING})"
    )
    return [
        NodeSuspected(
            **st.meta(),
            node_sluid=node.node_sluid,
            name=node.name,
            reason=reason,
            silent_nodes=req.silent_nodes,
            watched_nodes=req.watched_nodes,
        )
    ]
