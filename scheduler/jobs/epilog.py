"""Prolog and epilog reports from the node daemons.

``ReportEpilog`` (every node of a run reports one after each ``KillRun``, including the
``TERMINATE`` sent when the run ended):

- awaited (the job is COMPLETING for this run and waits for this node):
  ``NodeEpilogCompleted(ok)``; if it failed, ``NodeStateChanged(DRAIN, "Epilog error")`` and,
  for a job with the expedite flag whose script exited non-zero, ``JobExpediting(EPILOG_FAILED)``
  (once); the node is free again unless the job keeps it
  (:func:`scheduler.requeue.rules.defers_release`); after the last awaited node, the requeue
  (``JobRequeued`` ..., :func:`scheduler.requeue.rules.requeued_facts`);
- not awaited and failed: ``NodeEpilogCompleted(ok=False)`` and the node drained (Slurm drains
  a node on any epilog error); not awaited and fine: nothing (a duplicate, or a run that ended
  for good).

``ReportProlog`` (only failures are reported): the node is drained (``Prolog error``); the run,
if current and not already being killed, is killed on every node
(``RunKillRequested(PROLOG_FAILED)``) and ends at once — ``JobEnded(REQUEUED)`` with the requeue
pending (reason ``PROLOG_FAILED``, held unless ``nohold_on_prolog_fail``, as Slurm's launch
failure requeue), or ``JobEnded(FAILED)`` for a job that may not be requeued.
"""

from __future__ import annotations

from dataclasses import replace

from scheduler.records import (
    Fact,
    JobEnded,
    JobExpediting,
    NodeEpilogCompleted,
    NodeStateChanged,
    ReportEpilog,
    ReportProlog,
    RunKillRequested,
)
from scheduler.requeue.rules import (
    EXPEDITE,
    defers_release,
    end_outcome,
    end_requeue_reason,
    ending_facts,
    held_after_end,
    requeued_facts,
)
from scheduler.shard.model import Job, Node
from scheduler.shard.reasons import JobState, NodeReason, NodeState, RequeueReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = [
    "decide_epilog",
    "decide_prolog",
    "epilog_after_end",
    "epilog_done",
    "epilog_with_exit",
]

NodeRef = tuple[str, str]
"""(node SLUID, node name)."""
Outcome = tuple[bool, str]
"""(ok, detail) of an epilog."""


def _node(state: ShardState, sluid: str, name: str) -> Node | None:
    node = state.nodes.get(sluid)
    if node is None or node.superseded or node.name != name:
        node = state.nodes.get(state.node_sluid_by_name(name))
    return node


def _drain(node: Node | None, reason: str, st: Stamper) -> list[Fact]:
    if node is None or node.state in (NodeState.DOWN, NodeState.DRAIN):
        return []
    return [
        NodeStateChanged(
            **st.meta(),
            node_sluid=node.node_sluid,
            name=node.name,
            state=NodeState.DRAIN,
            reason=reason,
        )
    ]


def decide_epilog(state: ShardState, req: ReportEpilog, st: Stamper) -> list[Fact]:
    """ReportEpilog → NodeEpilogCompleted and what it completes (see the module)."""
    job = state.jobs.get(req.job_sluid)
    awaited = (
        job is not None
        and job.is_completing
        and job.run_sluid == req.run_sluid
        and req.node_name in job.completing
    )
    if not awaited and req.ok:
        return []
    node = _node(state, req.node_sluid, req.node_name)
    ref = (node.node_sluid if node is not None else req.node_sluid, req.node_name)
    detail = req.detail or ("" if req.ok else f"epilog exited {req.exit_code}")
    if job is None or not awaited:
        return [
            NodeEpilogCompleted(
                **st.meta(),
                node_sluid=ref[0],
                name=ref[1],
                job_sluid=req.job_sluid,
                run_sluid=req.run_sluid,
                ok=False,
                detail=detail,
            ),
            *_drain(node, NodeReason.EPILOG_ERROR, st),
        ]
    drained = None if req.ok else node
    return epilog_done(state, job, ref, (req.ok, detail), st, drained)


def epilog_done(
    state: ShardState,
    job: Job,
    ref: NodeRef,
    outcome: Outcome,
    st: Stamper,
    drained: Node | None = None,
) -> list[Fact]:
    """The COMPLETING ``job`` stops waiting for node ``ref``: NodeEpilogCompleted, the drain of
    ``drained`` (a failed epilog), JobExpediting(EPILOG_FAILED) when that expedites the job,
    the node given back (unless the job defers), and the requeue after the last node."""
    ok, detail = outcome
    name = ref[1]
    facts: list[Fact] = [
        NodeEpilogCompleted(
            **st.meta(),
            node_sluid=ref[0],
            name=name,
            job_sluid=job.job_sluid,
            run_sluid=job.run_sluid,
            ok=ok,
            detail=detail,
        ),
        *_drain(drained, NodeReason.EPILOG_ERROR, st),
    ]
    if (
        not ok
        and job.requeue == EXPEDITE
        and job.requeue_reason == RequeueReason.EXIT_NONZERO
        and not job.expediting
    ):
        facts.append(
            JobExpediting(
                **st.meta(),
                job_sluid=job.job_sluid,
                run_sluid=job.run_sluid,
                trigger=RequeueReason.EPILOG_FAILED,
            )
        )
    held = job.held
    if not defers_release(job):
        held = tuple(n for n in held if n != name)
    completing = tuple(n for n in job.completing if n != name)
    if completing:
        return facts
    scratch = replace(job, completing=(), held=held, epilog_failed=job.epilog_failed or not ok)
    return facts + requeued_facts(state, scratch, st)


def _ref(job: Job, name: str) -> NodeRef:
    sluids = dict(zip(job.nodes, job.node_sluids, strict=True))
    return sluids.get(name, ""), name


def epilog_with_exit(
    state: ShardState, job: Job, end: tuple[str, int], name: str, st: Stamper
) -> list[Fact]:
    """The batch host ``name`` reported the RUNNING ``job``'s exit (``end``: state, exit code)
    with ``epilog_done``: what its ``ReportEpilog(ok)`` would decide right after the
    ``JobEnded``. A run that ends for good frees its nodes at ``JobEnded`` and waits for no
    epilog: nothing. A requeue that waits for this node's epilog (the job COMPLETING,
    :func:`scheduler.requeue.rules.ending_facts`): the node's ``NodeEpilogCompleted(ok)``, and
    the requeue if it was the last node awaited (:func:`epilog_done`)."""
    kill = job.kill_reason
    reason = end_requeue_reason(job, kill, end[0], end[1], state.config.requeue)
    held = held_after_end(state, job) if reason else ()
    if name not in held:
        return []
    expedite = reason == RequeueReason.NODE_FAIL and job.requeue == EXPEDITE
    completing = replace(
        job,
        state=JobState.COMPLETING,
        exit_code=end[1],
        requeue_reason=reason,
        completing=held,
        held=held,
        expediting=job.expediting or expedite,
        epilog_failed=job.epilog_failed or expedite,
        missing=(),
    )
    return epilog_done(state, completing, _ref(job, name), (True, ""), st)


def epilog_after_end(state: ShardState, job: Job, name: str, st: Stamper) -> list[Fact]:
    """The batch host ``name`` reported with ``epilog_done`` the exit of a run the shard had
    already ended otherwise (a node failure, a missing run) and whose requeue waits for epilogs
    (the COMPLETING ``job``, the report's run): if it awaits this node, its epilog is done, as
    a ``ReportEpilog(ok)`` would decide; otherwise nothing."""
    if not job.is_completing or name not in job.completing:
        return []
    return epilog_done(state, job, _ref(job, name), (True, ""), st)


def decide_prolog(state: ShardState, req: ReportProlog, st: Stamper) -> list[Fact]:
    """ReportProlog(ok=False) → the node drained; the current run killed and ended."""
    if req.ok:
        return []
    facts = _drain(_node(state, req.node_sluid, req.node_name), NodeReason.PROLOG_ERROR, st)
    job = state.jobs.get(req.job_sluid)
    if job is None or not job.is_running or job.run_sluid != req.run_sluid or job.kill_reason:
        return facts
    kill = JobState.PROLOG_FAILED
    end = JobState.REQUEUED if job.requeue != "no" else JobState.FAILED
    detail = req.detail or f"prolog exited {req.exit_code}"
    outcome = end_outcome(state, job, kill, (end, req.exit_code))
    facts += [
        RunKillRequested(
            **st.meta(),
            job_sluid=job.job_sluid,
            run_sluid=job.run_sluid,
            reason=kill,
            nodes=job.nodes,
        ),
        JobEnded(
            **st.meta(),
            job_sluid=job.job_sluid,
            job_id=job.job_id,
            run_sluid=job.run_sluid,
            state=end,
            exit_code=req.exit_code,
            reason=f"{NodeReason.PROLOG_ERROR} on {req.node_name}: {detail}",
            **outcome.fact_fields(),
        ),
    ]
    return facts + ending_facts(state, job, kill, (end, req.exit_code), st)
