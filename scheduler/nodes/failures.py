"""Node failure: a node goes DOWN, the runs on it end ``NODE_FAIL`` and may be requeued.

A node fails when the health agent reports it (``NodeFailed``: it missed its heartbeats), when
an operator takes it down (``DrainNode(down=True)``), when it registers again while the shard
still thinks it runs something (``Node unexpectedly rebooted``), or when its name registers under
a new node SLUID. :func:`fail_node` then decides, in this order:

1. ``NodeStateChanged(DOWN, reason)`` (unless it is DOWN already);
2. for each run on the node, by job id: ``RunKillRequested(NODE_FAIL)`` to the run's other nodes
   (unless a kill is already in progress), ``JobEnded(NODE_FAIL)``, then, when the job is
   requeued (:mod:`scheduler.requeue.rules`),
   ``JobExpediting(NODE_FAIL)`` for a job with the expedite flag, and, if no other node of the
   run is left to wait for, the requeue itself (``JobRequeued`` ...);
3. for each job whose requeue waits for this node's epilog, by job id:
   ``NodeEpilogCompleted(ok=True, detail="Node DOWN: ...")`` — a DOWN node counts as done — and
   what that completes.

The reason is Slurm's: ``Not responding`` (with the agent's detail in brackets) for a missed
heartbeat, which is also what lets the node return to service when it registers again
(Slurm's ``ReturnToService=1``); a DRAIN node that fails keeps its drain reason, so it stays out
of service until an operator resumes it.
"""

from __future__ import annotations

from scheduler.jobs.epilog import epilog_done
from scheduler.nodes.return_to_service import is_suspected_partition, suspect_node
from scheduler.records import Fact, JobEnded, NodeFailed, NodeStateChanged, RunKillRequested
from scheduler.requeue.rules import FINAL_KILLS, end_outcome, ending_facts
from scheduler.shard.model import Job, Node
from scheduler.shard.reasons import JobState, NodeReason, NodeState
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = [
    "completing_on",
    "decide_node_failed",
    "fail_node",
    "not_responding",
    "runs_on",
]


def not_responding(detail: str) -> str:
    """Slurm's ``Not responding`` reason, with the health agent's detail in brackets."""
    if not detail or detail == NodeReason.NOT_RESPONDING:
        return NodeReason.NOT_RESPONDING
    return f"{NodeReason.NOT_RESPONDING} ({detail})"


def decide_node_failed(state: ShardState, req: NodeFailed, st: Stamper) -> list[Fact]:
    """NodeFailed → the node goes DOWN and its runs end with NODE_FAIL (see the module); in a
    suspected partition (:mod:`scheduler.nodes.return_to_service`) only ``NodeSuspected``."""
    node = state.nodes.get(req.node_sluid)
    if node is None or node.superseded or node.state == NodeState.DOWN:
        return []
    if is_suspected_partition(state.config, req):
        return suspect_node(node, req, st)
    reason = node.reason if node.state == NodeState.DRAIN else not_responding(req.reason)
    return fail_node(state, node, reason, st)


def runs_on(state: ShardState, name: str) -> list[Job]:
    """The running jobs holding node ``name``, in job id order."""
    jobs = [state.jobs[s] for s in state.running if name in state.jobs[s].nodes]
    return sorted(jobs, key=lambda job: job.job_id)


def completing_on(state: ShardState, name: str) -> list[Job]:
    """The COMPLETING jobs waiting for the epilog of node ``name``, in job id order."""
    jobs = [state.jobs[s] for s in state.completing if name in state.jobs[s].completing]
    return sorted(jobs, key=lambda job: job.job_id)


def fail_node(state: ShardState, node: Node, reason: str, st: Stamper, by: str = "") -> list[Fact]:
    """Take a node DOWN; end (and maybe requeue) its runs; stop waiting for its epilogs. ``by``:
    the operator who asked (``DrainNode(down=True)``); "" when Sluice decided it."""
    facts: list[Fact] = []
    if node.state != NodeState.DOWN:
        facts.append(
            NodeStateChanged(
                **st.meta(),
                node_sluid=node.node_sluid,
                name=node.name,
                state=NodeState.DOWN,
                reason=reason,
                by=by,
            )
        )
    down = frozenset({node.name})
    for job in runs_on(state, node.name):
        facts += _end_run(state, job, node.name, reason, st, down)
    for job in completing_on(state, node.name):
        detail = f"Node DOWN: {reason}"
        facts += epilog_done(state, job, (node.node_sluid, node.name), (True, detail), st)
    return facts


def _end_run(
    state: ShardState,
    job: Job,
    failed: str,
    reason: str,
    st: Stamper,
    down: frozenset[str],
) -> list[Fact]:
    facts: list[Fact] = []
    others = tuple(n for n in job.nodes if n != failed)
    if others and not job.kill_reason:
        facts.append(
            RunKillRequested(
                **st.meta(),
                job_sluid=job.job_sluid,
                run_sluid=job.run_sluid,
                reason=JobState.NODE_FAIL,
                nodes=others,
            )
        )
    # a run whose cancel, time limit or preemption was already in force ends in that state,
    # as Slurm's job does (it took it when the kill was decided); NODE_FAIL otherwise
    final = job.kill_reason if job.kill_reason in FINAL_KILLS else JobState.NODE_FAIL
    end = (final, 0)
    outcome = end_outcome(state, job, job.kill_reason, end, down)
    facts.append(
        JobEnded(
            **st.meta(),
            job_sluid=job.job_sluid,
            job_id=job.job_id,
            run_sluid=job.run_sluid,
            state=final,
            reason=reason,
            **outcome.fact_fields(),
        )
    )
    return facts + ending_facts(state, job, job.kill_reason, end, st, down)
