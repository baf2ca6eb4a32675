"""``schedule(state, now_ms) -> facts``: one scheduling pass.

In order: (1) runs past their time limit get ``RunKillRequested(TIMEOUT)`` once; (2) pending
jobs are sorted into queue order; (3) the main pass walks the queue and starts every job that
fits now, in node order, until a job of a partition does not fit (then the partition's later
jobs wait with reason ``Priority``); (4) a ``JobPending`` is recorded for every job whose
pending reason changed. The pass never writes the state: it works on a scratch copy of the free
resources and returns facts, which the shell evolves.
"""

from __future__ import annotations

from scheduler.facts import Fact, JobPending, JobStarted, NodeStateChanged, RunKillRequested
from scheduler.model import Hold, Job
from scheduler.occupancy import allocation_state
from scheduler.placement import Free, choose_nodes
from scheduler.reasons import JobState, NodeState, PendingReason
from scheduler.stamp import Stamper
from scheduler.state import ShardState

__all__ = ["schedule"]


def schedule(state: ShardState, now_ms: int) -> list[Fact]:
    """One pass: timeouts, queue order, main pass; the facts in decision order."""
    st = Stamper(state, now_ms)
    facts = _timeouts(state, st)
    facts += _main_pass(state, st)
    return facts


def _timeouts(state: ShardState, st: Stamper) -> list[Fact]:
    """RunKillRequested(TIMEOUT) for each run whose start + limit ≤ now, by deadline then id."""
    now = st.time_ms
    due = [
        job
        for s in state.running
        if (job := state.jobs[s]).time_limit_s > 0
        and not job.kill_reason
        and job.start_ms + job.time_limit_s * 1000 <= now
    ]
    due.sort(key=lambda j: (j.start_ms + j.time_limit_s * 1000, j.job_id))
    return [
        RunKillRequested(
            **st.meta(),
            job_sluid=j.job_sluid,
            run_sluid=j.run_sluid,
            reason=JobState.TIMEOUT,
            nodes=j.nodes,
        )
        for j in due
    ]


def queue_key(job: Job) -> tuple[int, int, int, str]:
    """Queue order: higher priority first, then earlier submission, then SLUID."""
    return (-job.priority, job.submit_ms, job.job_id, job.job_sluid)


def _blocking_reason(job: Job, state: ShardState, now: int) -> str:
    if job.hold == Hold.ADMIN:
        return PendingReason.HELD_ADMIN
    if job.hold == Hold.USER:
        return PendingReason.HELD_USER
    if job.spec.begin_time_ms > now:
        return PendingReason.BEGIN_TIME
    part = state.config.partition(job.partition)
    if part is None or part.state in ("DOWN", "INACTIVE"):
        return PendingReason.PARTITION_DOWN
    return ""


def _main_pass(state: ShardState, st: Stamper) -> list[Fact]:
    now = st.time_ms
    index = state.index
    free = Free(index)
    announced: dict[int, str] = {}
    blocked: set[str] = set()
    facts: list[Fact] = []
    reasons: list[tuple[Job, str]] = []
    for job in sorted((state.jobs[s] for s in state.pending), key=queue_key):
        reason = _blocking_reason(job, state, now)
        if not reason and job.partition in blocked:
            reason = PendingReason.PRIORITY
        if not reason:
            mask = free.fits(job.demand, index.usable & index.part_masks[job.partition])
            slots = choose_nodes(mask, job.demand)
            if slots is not None:
                facts += _start(state, st, job, slots, free, announced)
                continue
            blocked.add(job.partition)
            reason = PendingReason.RESOURCES
        reasons.append((job, reason))
    facts += [
        JobPending(**st.meta(), job_sluid=job.job_sluid, reason=reason, priority=job.priority)
        for job, reason in reasons
        if reason != job.reason
    ]
    return facts


def _start(
    state: ShardState, st: Stamper, job: Job, slots: object, free: Free, announced: dict[int, str]
) -> list[Fact]:
    import numpy as np  # noqa: PLC0415

    index = free.index
    slot_array = np.asarray(slots)
    free.take(slot_array, job.demand)
    meta = st.meta()
    slot_list = slot_array.tolist()
    facts: list[Fact] = [
        JobStarted(
            **meta,
            job_sluid=job.job_sluid,
            job_id=job.job_id,
            run_sluid=st.new_sluid(),
            restart_count=job.restart_count + (1 if job.run_sluid else 0),
            nodes=tuple(index.names[i] for i in slot_list),
            node_sluids=tuple(index.sluids[i] for i in slot_list),
            partition=job.partition,
            user=job.spec.user,
            time_limit_s=job.time_limit_s,
            submit_ms=job.submit_ms,
        )
    ]
    for i in slot_list:
        new = allocation_state(int(free.njobs[i]), int(free.cpus[i]))
        old = announced.get(i) or state.nodes[index.sluids[i]].state
        if old in NodeState.SCHEDULABLE and old != new:
            announced[i] = new
            facts.append(
                NodeStateChanged(
                    **st.meta(), node_sluid=index.sluids[i], name=index.names[i], state=new
                )
            )
    return facts
