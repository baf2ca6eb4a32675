"""``evolve(state, fact) -> state``: the only writer of shard state.

It first advances the shard's counters from the fact's meta (``shard_seq``, the SLUID clock,
``now_ms``), then applies the fact. It updates the state in place and returns it (the shell
writes ``state = evolve(state, fact)``); folding the ledger from :func:`initial_state` with it
rebuilds the exact state, clock and counters included. Facts about unknown or stale subjects
change only the counters, so a replay never fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from scheduler.config.cluster import parse_config
from scheduler.jobs.admission import resolve
from scheduler.jobs.answer_folds import ANSWER_FOLDS
from scheduler.jobs.priority_updates import job_priority_set
from scheduler.jobs.retention import purge_ended
from scheduler.jobs.running_updates import job_details_changed, time_limit_changed
from scheduler.jobs.signals import SignalReason
from scheduler.jobs.steps import STEP_FOLDS
from scheduler.nodes.missing_runs import note_missing
from scheduler.nodes.registration_requests import (
    NODE_SLUID_IN_USE,
    forget_refused,
    remember_refused,
)
from scheduler.records import (
    ConfigApplied,
    CycleCompleted,
    Fact,
    JobDetailsChanged,
    JobEnded,
    JobExpediting,
    JobHeld,
    JobPending,
    JobPrioritySet,
    JobQueued,
    JobReleased,
    JobRequeued,
    JobStarted,
    NodeEpilogCompleted,
    NodeRegistered,
    NodeStateChanged,
    NodeSuspected,
    RequestDenied,
    RunKillRequested,
    RunMissingNoted,
    RunSignalled,
    TimeLimitChanged,
)
from scheduler.requeue.evolve import (
    end_with_requeue,
    job_expediting,
    job_requeued,
    node_epilog_completed,
)
from scheduler.requeue.rules import requeue_policy, restart_after_ms
from scheduler.reservations.fold import RESERVATION_FOLDS
from scheduler.scheduling.fairshare import accrue_usage, charge_usage, rebase_usage
from scheduler.shard.model import Hold, Job, Node, job_with, node_with_state
from scheduler.shard.reasons import JobState, NodeState, PendingReason
from scheduler.shard.state import ShardState

__all__ = ["evolve"]


def evolve(state: ShardState, fact: Fact) -> ShardState:
    """Apply one fact to the state (in place) and return the state."""
    meta = state.meta
    meta.shard_seq = fact.shard_seq
    meta.now_ms = max(meta.now_ms, fact.time_ms)
    meta.last_sluid = max(meta.last_sluid, fact.event_sluid)  # see _advance_clock
    kind = type(fact)
    handler = _HANDLERS.get(kind)
    if handler is not None:
        if state.carried is not None and (
            kind not in _KEEP_CARRIED
            or (isinstance(fact, JobQueued) and fact.job_sluid in state.jobs)
        ):
            state.carried = None  # the last pass cannot be carried on (scheduler.scheduling.carry)
        handler(state, fact)
    return state


_KEEP_CARRIED = frozenset((JobQueued, JobPending, JobStarted, CycleCompleted, RunSignalled,
                           *ANSWER_FOLDS))
"""Facts after which the last scheduling pass may still be carried on: a new job (an update
of a known one is not), a pending reason or a start (the pass checks they are its own), a
cycle's close (purges ended jobs, accrues usage: nothing a carried pass depends on), a signal
to a run (it changes no resource and no pending job), a squeue --start plan (it changes none
either, nor does a sprio or sshare answer)."""


def _advance_clock(state: ShardState, sluid: str) -> None:
    """``SluidClock.after`` for a SLUID this shard minted.

    The shard's own SLUIDs share its cluster id, so their text order is their (ms, sequence)
    order: keeping the greatest text is the clock, without parsing on every fact.
    """
    meta = state.meta
    meta.last_sluid = max(meta.last_sluid, sluid)


def _job_queued(state: ShardState, fact: JobQueued) -> None:
    known = state.jobs.get(fact.job_sluid)
    resolved = resolve(fact.spec, state.config)
    if known is not None:  # an update of a pending job: same job, new spec
        if known.is_pending:
            state.count_user(known, -1)
            new_dependency = fact.spec.dependency != known.spec.dependency
            job = replace(
                known,
                spec=fact.spec,
                partition=resolved.partition,
                qos=resolved.qos,
                account=resolved.account,
                time_limit_s=resolved.time_limit_s,
                demand=resolved.demand,
                requeue=requeue_policy(fact.spec, state.config),
                # a new dependency is judged afresh; any other update keeps the latch. Its
                # reason goes too, so the pass says (and so latches) a new text it finds
                # never satisfiable as well: the pass states only a reason that changed
                dependency_failed="" if new_dependency else known.dependency_failed,
                reason=PendingReason.NONE
                if new_dependency and known.reason == PendingReason.DEPENDENCY_NEVER_SATISFIED
                else known.reason,
            )
            state.jobs[job.job_sluid] = job
            state.count_user(job, +1)
        return
    if fact.array_job_sluid:
        _advance_clock(state, fact.job_sluid)
        state.arrays.setdefault(fact.array_job_sluid, []).append(fact.job_sluid)
    job = Job(
        job_sluid=fact.job_sluid,
        job_id=fact.job_id,
        spec=fact.spec,
        submit_ms=fact.time_ms,
        partition=resolved.partition,
        qos=resolved.qos,
        account=resolved.account,
        time_limit_s=resolved.time_limit_s,
        demand=resolved.demand,
        hold=Hold.USER if fact.spec.hold else Hold.NONE,
        array_job_sluid=fact.array_job_sluid,
        array_task_id=fact.array_task_id,
        requeue=requeue_policy(fact.spec, state.config),
        nonce=fact.nonce,
    )
    state.jobs[job.job_sluid] = job
    state.job_by_id[job.job_id] = job.job_sluid
    state.meta.next_job_id = max(state.meta.next_job_id, fact.job_id + 1)
    state.track(job)
    state.count_user(job, +1)


def _job_pending(state: ShardState, fact: JobPending) -> None:
    job = state.jobs.get(fact.job_sluid)
    if job is not None and job.is_pending:
        job = job_with(job, reason=fact.reason, priority=fact.priority)
        if fact.reason == PendingReason.MAX_REQUEUE:  # Slurm resets batch_flag when it holds
            job = job_with(job, batch_requeues=0)
        elif fact.reason == PendingReason.DEPENDENCY_NEVER_SATISFIED:  # latched (dependencies.py)
            job = job_with(job, dependency_failed=job.spec.dependency)
        state.jobs[job.job_sluid] = job


def _job_started(state: ShardState, fact: JobStarted) -> None:
    _advance_clock(state, fact.run_sluid)
    job = state.jobs.get(fact.job_sluid)
    if job is None or not job.is_pending:
        return
    share = (job.demand.cpus, job.demand.mem_mb, job.demand.gpus)
    columns = (fact.alloc_cpus, fact.alloc_mem_mb, fact.alloc_gpus)
    if fact.nodes and all(len(c) == len(fact.nodes) for c in columns):  # each node's share
        alloc = list(zip(*columns, strict=True))  # (tasks may spread: jobs/task_layout.py)
    elif not job.demand.exclusive:  # a fact from before allocations were recorded: the demand's
        alloc = [share] * len(fact.nodes)
    else:  # whole nodes
        alloc = []
        for name in fact.nodes:
            node = state.nodes.get(state.node_by_name.get(name, ""))
            alloc.append((node.cpus, node.mem_mb, node.gpus) if node is not None else share)
    job = job_with(
        job,
        state=JobState.RUNNING,
        reason=PendingReason.NONE,
        run_sluid=fact.run_sluid,
        previous_run_sluid=job.run_sluid or job.previous_run_sluid,
        restart_count=fact.restart_count,
        partition=fact.partition or job.partition,  # -p a,b: the one it started in
        nodes=fact.nodes,
        node_sluids=fact.node_sluids,
        segments=fact.segments,
        alloc=tuple(alloc),
        start_ms=fact.time_ms,
        time_limit_s=fact.time_limit_s,
        kill_reason="",
        expediting=False,
        steps=(),
        next_step_id=0,
        limit_signalled=False,
        missing=(),
        # the run's fence horizon, from the configuration in force at its start (LaunchRun)
        restart_after_ms=restart_after_ms(job.requeue, state.config.requeue),
    )
    state.jobs[job.job_sluid] = job
    state.track(job)
    index = state.built_index()
    if index is not None:
        index.allocate(job)
    state.meta.started_in_cycle += 1


def _run_kill_requested(state: ShardState, fact: RunKillRequested) -> None:
    job = state.jobs.get(fact.job_sluid)
    if job is not None and job.is_running and job.run_sluid == fact.run_sluid:
        state.jobs[job.job_sluid] = job_with(job, kill_reason=fact.reason)
        index = state.built_index()
        if index is not None:
            index.run_killed(job.job_sluid)  # a run being killed is expected to end now


def _run_signalled(state: ShardState, fact: RunSignalled) -> None:
    """Only the ``--signal`` warning changes the job: it is sent once per run."""
    job = state.jobs.get(fact.job_sluid)
    if (fact.reason == SignalReason.TIME_LIMIT and job is not None
            and job.run_sluid == fact.run_sluid):
        job = job_with(job, limit_signalled=True)
        state.jobs[job.job_sluid] = job
        state.file_flags(job)


def _run_missing_noted(state: ShardState, fact: RunMissingNoted) -> None:
    job = state.jobs.get(fact.job_sluid)
    if job is not None and job.run_sluid == fact.run_sluid:
        state.jobs[job.job_sluid] = job_with(
            job, missing=note_missing(job.missing, fact.run_sluid, fact.name, fact.missing,
                                      fact.time_ms))


def _job_ended(state: ShardState, fact: JobEnded) -> None:
    job = state.jobs.get(fact.job_sluid)
    if job is None or job.has_ended or end_with_requeue(state, job, fact):
        return
    if job.is_completing:  # cancelled while its requeue waited for epilogs
        index = state.built_index()
        if index is not None:
            index.release(job)
        job = job_with(job, completing=(), held=(), requeue_reason="")
    if job.is_running:
        index = state.built_index()
        if index is not None:
            index.release(job)
        charge_usage(state.meta, state.config, job, fact.time_ms)
    state.count_user(job, -1)
    job = job_with(
        job,
        state=fact.state,
        end_ms=fact.time_ms,
        exit_code=fact.exit_code,
        signal=fact.signal,
        reason=fact.reason or job.reason,
        missing=(),
    )
    state.jobs[job.job_sluid] = job
    state.track(job)


def _job_held(state: ShardState, fact: JobHeld) -> None:
    job = state.jobs.get(fact.job_sluid)
    if job is not None and job.is_pending:
        job = state.jobs[job.job_sluid] = job_with(
            job, hold=Hold.ADMIN if fact.admin else Hold.USER
        )
        state.file_flags(job)


def _job_released(state: ShardState, fact: JobReleased) -> None:
    job = state.jobs.get(fact.job_sluid)
    if job is not None and job.is_pending:
        job = state.jobs[job.job_sluid] = job_with(job, hold=Hold.NONE)
        state.file_flags(job)


def _node_registered(state: ShardState, fact: NodeRegistered) -> None:
    previous = state.node_by_name.get(fact.name)
    if previous is not None and previous != fact.node_sluid:
        state.nodes[previous] = replace(state.nodes[previous], superseded=True)
    known = state.nodes.get(fact.node_sluid)
    node = Node(
        node_sluid=fact.node_sluid,
        name=fact.name,
        cpus=fact.cpus,
        mem_mb=fact.mem_mb,
        gpus=fact.gpus,
        gpu_type=fact.gpu_type,
        features=fact.features,
        partitions=fact.partitions,
        state=known.state if known is not None else "UNKNOWN",
        reason=known.reason if known is not None else "",
        registered_ms=fact.time_ms,
        registrant=fact.registrant,
    )
    if known is not None and known.name != fact.name:
        state.node_by_name.pop(known.name, None)
    state.nodes[node.node_sluid] = node
    state.node_by_name[node.name] = node.node_sluid
    state.invalidate_index()
    forget_refused(state.meta, fact.node_sluid)


def _request_denied(state: ShardState, fact: RequestDenied) -> None:
    if fact.request == "RegisterNode" and fact.reason != NODE_SLUID_IN_USE:
        remember_refused(state.meta, fact.subject_sluid)  # a clash is asked again at once


def _node_state_changed(state: ShardState, fact: NodeStateChanged) -> None:
    if fact.state == NodeState.INVALID_REG:
        remember_refused(state.meta, fact.node_sluid)
    node = state.nodes.get(fact.node_sluid)
    if node is None:
        return
    service = NodeState.IDLE if fact.state in NodeState.SCHEDULABLE else fact.state
    state.nodes[node.node_sluid] = node_with_state(node, service, fact.reason)
    index = state.built_index()
    if index is not None and not node.superseded:
        index.set_usable(node.name, service)


def _node_suspected(state: ShardState, fact: NodeSuspected) -> None:
    node = state.nodes.get(fact.node_sluid)
    if node is None:
        return
    state.nodes[node.node_sluid] = replace(node, suspect=fact.reason)
    index = state.built_index()
    if index is not None and not node.superseded:
        index.set_usable(node.name, NodeState.DOWN)  # no new work until it answers


def _config_applied(state: ShardState, fact: ConfigApplied) -> None:
    state.meta.config_texts[fact.kind] = fact.text
    if fact.kind == "cluster":
        old_half_life = state.meta.config.priority.decay_half_life_s
        state.meta.config = parse_config(fact.text, fact.config_sluid)
        if state.meta.config.priority.decay_half_life_s != old_half_life:
            rebase_usage(state.meta, old_half_life, fact.time_ms)
    if fact.kind in ("cluster", "topology"):
        state.invalidate_index()


def _cycle_completed(state: ShardState, fact: CycleCompleted) -> None:
    state.meta.inbox_offset = fact.inbox_to
    state.meta.started_in_cycle = 0
    state.meta.cycle_ms = fact.time_ms
    state.meta.purged_jobs = purge_ended(state)
    accrue_usage(state, fact.time_ms)


def _step(change: Callable[[Job, Any], Job | None]) -> Callable[[ShardState, Any], None]:
    """A fold of a step fact: the job's open steps change (scheduler.jobs.steps)."""

    def fold(state: ShardState, fact: Any) -> None:
        job = state.jobs.get(fact.job_sluid)
        changed = None if job is None else change(job, fact)
        if changed is not None:
            state.jobs[changed.job_sluid] = changed

    return fold


_HANDLERS: dict[type, Callable[[ShardState, Any], None]] = {
    JobQueued: _job_queued,
    JobPending: _job_pending,
    JobStarted: _job_started,
    RunKillRequested: _run_kill_requested,
    RunSignalled: _run_signalled,
    TimeLimitChanged: time_limit_changed,
    JobDetailsChanged: job_details_changed,
    RunMissingNoted: _run_missing_noted,
    JobEnded: _job_ended,
    JobHeld: _job_held,
    JobPrioritySet: job_priority_set,
    JobReleased: _job_released,
    NodeRegistered: _node_registered,
    NodeStateChanged: _node_state_changed,
    RequestDenied: _request_denied,
    NodeSuspected: _node_suspected,
    ConfigApplied: _config_applied,
    CycleCompleted: _cycle_completed,
    **{kind: _step(change) for kind, change in STEP_FOLDS.items()},
    JobExpediting: job_expediting,
    NodeEpilogCompleted: node_epilog_completed,
    JobRequeued: job_requeued,
    **ANSWER_FOLDS,
    **RESERVATION_FOLDS,
}
