"""Requeue after a run ends: Slurm's rules, shared by ``decide`` and ``evolve``.

A run that ends (``JobEnded``) either ends its job for good or leaves the job **COMPLETING**
with a requeue pending; :func:`end_requeue_reason` says which, from the job, the kill in force,
the end state and the exit code (the same answer when ``decide`` writes the fact and when
``evolve`` folds it, so replay rebuilds the same state):

======================  =====================================================  ================
requeue reason          when                                                   jobs
======================  =====================================================  ================
``NODE_FAIL``           a node of the run failed (``JobEnded(NODE_FAIL)``)     requeue yes/exp.
``EXIT_NONZERO``        the batch script exited non-zero (``FAILED``)          expedite only
``ADMIN``               ``RequeueJob`` killed the run (``REQUEUED``)           requeue yes/exp.
``PROLOG_FAILED``       a prolog failed (``REQUEUED``)                         requeue yes/exp.
``REQUEUE_EXIT``        the exit code is in ``RequeueExit`` (``COMPLETED`` or  requeue yes/exp.
                        ``FAILED``)
``SPECIAL_EXIT``        the exit code is in ``RequeueExitHold``: requeued      requeue yes/exp.
                        held
======================  =====================================================  ================

A cancel, a time limit or a preemption in progress wins: such a run is never requeued. The
expedite flag's non-zero-exit rule wins over ``RequeueExit``/``RequeueExitHold`` (Slurm's
``_set_job_requeue_exit_value``); a job that may not be requeued (``no``) ignores both lists. The
exit code is the exit status (Slurm's ``WEXITSTATUS``): a script killed by a signal has 0.

While COMPLETING the job holds the nodes of the run that are not DOWN and waits for their
epilogs (``NodeEpilogCompleted``); a DOWN node counts as done. A job with the expedite flag
whose requeue is a node failure or a non-zero exit (Slurm's ``JOB_EXPEDITING``) keeps every node
until the last epilog (:func:`defers_release`); any other job gives each node back as its
epilog completes. Then :func:`requeued_facts` is Slurm's ``batch_requeue_fini``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from scheduler.config.model import ClusterConfig, RequeueConfig
from scheduler.records import Fact, JobExpediting, JobPending, JobRequeued, JobSpec
from scheduler.records.fast_init import fast_init
from scheduler.shard.model import Hold, Job
from scheduler.shard.reasons import JobState, NodeState, PendingReason, RequeueReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = [
    "EXPEDITE",
    "FINAL_KILLS",
    "EndOutcome",
    "defers_release",
    "end_outcome",
    "end_requeue_reason",
    "ending_facts",
    "held_after_end",
    "requeue_policy",
    "requeued_facts",
    "requeued_job",
    "restart_after_ms",
]

EXPEDITE = "expedite"
_ADMIN_KILLS = (JobState.REQUEUED, JobState.REQUEUE_HOLD)
FINAL_KILLS = (JobState.CANCELLED, JobState.TIMEOUT, JobState.PREEMPTED)
"""Kills after which a run's end is the job's end, in the kill's state."""


def requeue_policy(spec: JobSpec, config: ClusterConfig) -> str:
    """``yes``, ``no`` or ``expedite``: the spec's choice, else ``JobRequeue`` (at queueing)."""
    if spec.requeue in ("yes", "no", EXPEDITE):
        return spec.requeue
    return "yes" if config.requeue.job_requeue else "no"


def restart_after_ms(policy: str, config: RequeueConfig) -> int:
    """How long after its node is declared DOWN a job launched now could start on another node
    (ms; ``LaunchRun.restart_after_ms``, the run's fence horizon on the node, docs/node-daemon.md
    "Fencing a cut-off daemon"): 0 for the expedite flag (eligible at once after the requeue),
    the requeue delay for a requeueable job (the requeue waits ``requeue_delay + 1`` s: a second
    of margin), -1 for a job that is not requeued (a node failure ends it ``NODE_FAIL``).

    The job's policy cannot change while it runs (only a pending job is updated); the delay can
    (``ApplyConfig``), so the run keeps the horizon it was launched with (``Job.restart_after_ms``)
    and its requeue never makes it eligible sooner (:func:`requeued_facts`)."""
    if policy == "no":
        return -1
    if policy == EXPEDITE:
        return 0
    return config.requeue_delay_s * 1000


def end_requeue_reason(
    job: Job, kill: str, end_state: str, exit_code: int, config: RequeueConfig
) -> str:
    """The ``JobRequeued`` reason a run's end leads to, or "" when the job ends for good.

    ``kill`` is the kill in force when the run ends (``job.kill_reason`` once any
    ``RunKillRequested`` of the same decision is folded; ``NODE_FAIL`` counts as none);
    ``config`` gives ``RequeueExit`` and ``RequeueExitHold`` (the state's configuration, the
    same when ``decide`` writes the ``JobEnded`` and when ``evolve`` folds it).
    """
    if kill in _ADMIN_KILLS:
        return RequeueReason.ADMIN
    if kill == JobState.PROLOG_FAILED:
        return RequeueReason.PROLOG_FAILED if job.requeue != "no" else ""
    if kill in FINAL_KILLS:
        return ""
    if end_state == JobState.NODE_FAIL:
        return RequeueReason.NODE_FAIL if job.requeue != "no" else ""
    if end_state == JobState.FAILED and job.requeue == EXPEDITE and exit_code != 0:
        return RequeueReason.EXIT_NONZERO
    if end_state in (JobState.COMPLETED, JobState.FAILED) and job.requeue != "no":
        if exit_code in config.requeue_exit:
            return RequeueReason.REQUEUE_EXIT
        if exit_code in config.requeue_exit_hold:
            return RequeueReason.SPECIAL_EXIT
    return ""


def defers_release(job: Job) -> bool:
    """Slurm's ``JOB_EXPEDITING`` while completing: every node is kept until the last epilog."""
    return _defers(job.requeue, job.requeue_reason)


def _defers(policy: str, reason: str) -> bool:
    return policy == EXPEDITE and reason in (RequeueReason.NODE_FAIL, RequeueReason.EXIT_NONZERO)


@fast_init
@dataclass(frozen=True, slots=True)
class EndOutcome:
    """What a ``JobEnded`` decides about its job (the fact's ``job_state``, ``requeue_reason``,
    ``held_nodes`` and ``defer_release``), so no reader re-applies the rule."""

    job_state: str
    requeue_reason: str = ""
    held_nodes: tuple[str, ...] = ()
    defer_release: bool = False

    def fact_fields(self) -> dict[str, Any]:
        """The four ``JobEnded`` fields (``dataclasses.asdict`` deep-copies: 4 % of a
        simulation went there)."""
        return {"job_state": self.job_state, "requeue_reason": self.requeue_reason,
                "held_nodes": self.held_nodes, "defer_release": self.defer_release}


def end_outcome(
    state: ShardState,
    job: Job,
    kill: str,
    end: tuple[str, int],
    down: frozenset[str] = frozenset(),
) -> EndOutcome:
    """The outcome of ending ``job``'s current run with ``end`` (state, exit code) while
    ``kill`` is in force: COMPLETING with the requeue's reason, the nodes kept until their
    epilogs and whether they are all kept until the requeue; else the final state. The same
    rules :func:`scheduler.evolve` applies when it folds the fact."""
    reason = end_requeue_reason(job, kill, *end, state.config.requeue)
    if not reason:
        return EndOutcome(job_state=end[0])
    return EndOutcome(
        job_state=JobState.COMPLETING,
        requeue_reason=reason,
        held_nodes=held_after_end(state, job, down),
        defer_release=_defers(job.requeue, reason),
    )


def held_after_end(
    state: ShardState, job: Job, down: frozenset[str] = frozenset()
) -> tuple[str, ...]:
    """The run's nodes that stay held until their epilog: all but the DOWN ones (and ``down``,
    the nodes the same decision takes DOWN before the run ends)."""
    kept = []
    for name, sluid in zip(job.nodes, job.node_sluids, strict=True):
        node = state.nodes.get(sluid)
        if name in down or node is None or node.superseded or node.state == NodeState.DOWN:
            continue
        kept.append(name)
    return tuple(kept)


def ending_facts(
    state: ShardState,
    job: Job,
    kill: str,
    end: tuple[str, int],
    st: Stamper,
    down: frozenset[str] = frozenset(),
) -> list[Fact]:
    """What follows a ``JobEnded(end_state)`` of ``job``'s run (``end`` = state, exit code).

    No requeue: nothing (the run's nodes are free again). Requeue pending: the job holds
    the nodes that are not DOWN; a job with the expedite flag that lost a node is expedited
    (``JobExpediting(NODE_FAIL)``, Slurm forces ``epilog_failed``); with no node to wait for,
    the requeue completes at once.
    """
    reason = end_requeue_reason(job, kill, *end, state.config.requeue)
    if not reason:
        return []
    facts: list[Fact] = []
    expedite = reason == RequeueReason.NODE_FAIL and job.requeue == EXPEDITE
    if expedite:
        facts.append(
            JobExpediting(
                **st.meta(),
                job_sluid=job.job_sluid,
                run_sluid=job.run_sluid,
                trigger=RequeueReason.NODE_FAIL,
            )
        )
    held = held_after_end(state, job, down)
    if not held:
        scratch = replace(
            job,
            requeue_reason=reason,
            kill_reason=kill,
            epilog_failed=job.epilog_failed or expedite,
            completing=(),
            held=(),
        )
        facts += requeued_facts(state, scratch, st)
    return facts


def requeued_facts(state: ShardState, job: Job, st: Stamper) -> list[Fact]:
    """Slurm's ``batch_requeue_fini`` for a COMPLETING ``job`` whose last epilog is done.

    ``JobRequeued``, then ``JobPending(JobHoldMaxRequeue, 0)`` when the job is over
    ``MaxBatchRequeue`` (the nodes it held are free again). Held: over the limit; an
    expedite-flag job after a non-zero exit with no failed epilog (``JobHeldUser``); a
    ``requeuehold``; a prolog failure (unless ``nohold_on_prolog_fail``); an exit code in
    ``RequeueExitHold`` (``SPECIAL_EXIT``). Expedited: the expedite flag with a failed epilog
    (always after a node failure). Eligible: now for a job with the expedite flag (Slurm's
    ``begin_time = 0``), else after ``requeue_delay + 1`` s — and never sooner than the horizon
    the run was launched with (``Job.restart_after_ms``): its part on a node cut off from the
    broker runs until then, so a requeue delay lowered while it ran (``ApplyConfig``) applies
    to the next run only.
    """
    config = state.config.requeue
    reason, now = job.requeue_reason, st.time_ms
    over = reason in RequeueReason.COUNTED and job.batch_requeues + 1 >= config.max_batch_requeue
    held = (
        over
        or (reason == RequeueReason.ADMIN and job.kill_reason == JobState.REQUEUE_HOLD)
        or (reason == RequeueReason.PROLOG_FAILED and not config.nohold_on_prolog_fail)
        or (reason == RequeueReason.EXIT_NONZERO and not job.epilog_failed)
        or reason == RequeueReason.SPECIAL_EXIT
    )
    expedite_flag = job.requeue == EXPEDITE
    begin = job.spec.begin_time_ms
    if begin <= now:
        begin = 0 if expedite_flag else now + (config.requeue_delay_s + 1) * 1000
    if job.restart_after_ms > 0:  # the launched run may live that long on a cut-off node
        begin = max(begin, now + job.restart_after_ms)
    if held:
        pending = PendingReason.HELD_USER
    elif begin > now:
        pending = PendingReason.BEGIN_TIME
    else:
        pending = PendingReason.NONE
    facts: list[Fact] = [
        JobRequeued(
            **st.meta(),
            job_sluid=job.job_sluid,
            job_id=job.job_id,
            run_sluid=job.run_sluid,
            reason=reason,
            expedite=expedite_flag and job.epilog_failed and not held and defers_release(job),
            held=held,
            begin_time_ms=begin,
            restart_count=job.restart_count + 1,
            pending_reason=pending,
        )
    ]
    if over:
        facts.append(
            JobPending(
                **st.meta(), job_sluid=job.job_sluid, reason=PendingReason.MAX_REQUEUE, priority=0
            )
        )
    return facts


def requeued_job(job: Job, fact: JobRequeued) -> Job:
    """The job pending again after ``fact`` (evolve): a new submit time, the begin time, the
    hold, EXPEDITING if expedited, the next run's restart count; the old run becomes the
    previous run (the next ``LaunchRun`` carries it for checkpoint restarts)."""
    if fact.held:
        reason = PendingReason.HELD_USER
    elif fact.begin_time_ms > fact.time_ms:
        reason = PendingReason.BEGIN_TIME
    else:
        reason = PendingReason.NONE
    counted = fact.reason in RequeueReason.COUNTED
    return replace(
        job,
        state=JobState.PENDING,
        reason=reason,
        hold=Hold.USER if fact.held else Hold.NONE,
        spec=replace(job.spec, begin_time_ms=fact.begin_time_ms),
        submit_ms=fact.time_ms,
        requeued_ms=fact.time_ms,
        run_sluid="",
        previous_run_sluid=job.run_sluid,
        restart_count=fact.restart_count,
        batch_requeues=job.batch_requeues + (1 if counted else 0),
        expediting=fact.expedite,
        epilog_failed=False,
        requeue_reason="",
        completing=(),
        held=(),
        kill_reason="",
    )
