"""Runs the shard holds on a node that the node no longer runs (Slurm's ``_purge_missing_jobs``).

A node's heartbeat lists the runs its daemon holds (``runs``) and the runs whose batch command
has exited and whose end report no ``TERMINATE`` has answered yet (``exited``, held there or
already dropped after their epilog). The health agent forwards it into the shard as
``NodeResponding`` when that matters (docs/node-daemon.md, "Runs the node no longer runs").
For each job the shard holds on the node, in job id order, :func:`decide_missing_runs`
decides:

- **RUNNING** — the run is *missing* when the heartbeat does not list it, or lists it as exited
  (the exit report that should have ended it was refused, dead-lettered or never sent). A run
  that started less than :data:`START_MARGIN_MS` before the heartbeat was sent is not missing
  (its ``LaunchRun`` may not have reached the node yet). The first heartbeat that misses it
  records ``RunMissingNoted(missing=true)``; the grace (``MissingRunGrace``) runs from that
  fact's time. A heartbeat that lists it running again records ``RunMissingNoted(missing=false)``
  (the grace is withdrawn). A heartbeat decided at or after the grace that still misses it ends
  the run as a node failure would, without taking the node DOWN: ``JobEnded`` with state
  ``NODE_FAIL`` (requeued when the job may be; the kill's own state when a kill — cancel, time
  limit, requeue — was already in progress) and the reason ``Run missing from node N (...)``.
  An exit report that arrives inside the grace ends the run first, with its real exit code.
- **COMPLETING** (a requeue waiting for the node's epilog) — the epilog is *missing* when the
  heartbeat no longer lists the run at all (the daemon dropped it after its epilog, whose
  ``ReportEpilog`` was lost). Noted and timed the same way; after the grace the epilog counts as
  done: ``NodeEpilogCompleted(ok=true, "Epilog not reported: Run missing from node N ...")``
  (Slurm: a registering node with no jobs clears its COMPLETING state). The notes of the
  running phase are dropped when the run ends (``JobEnded``): the epilog has a grace of its own.

All times are record times (the decision time of the forwarded heartbeat), never a clock; the
"missing since" time is a fact, so a replay of the ledger gives the same state.
"""

from __future__ import annotations

from scheduler.jobs.epilog import epilog_done
from scheduler.records import Fact, JobEnded, NodeResponding, RunMissingNoted
from scheduler.requeue.rules import end_outcome, ending_facts
from scheduler.shard.model import Job, Node
from scheduler.shard.reasons import JobState
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["START_MARGIN_MS", "decide_missing_runs", "jobs_on", "missing_reason", "note_missing"]

START_MARGIN_MS = 5_000
"""A run that started less than this before a heartbeat was sent may not have reached the node
yet (the ``LaunchRun`` is on its way, or the node's clock is a little behind the shard's): it
is not missing from that heartbeat."""


def missing_reason(name: str, missing_s: float) -> str:
    """The ``JobEnded`` reason of a run ended because its node no longer runs it."""
    return f"Run missing from node {name} (not running there for {missing_s:.0f} s)"


def note_missing(
    missing: tuple[tuple[str, str, int], ...], run: str, name: str, is_missing: bool, at_ms: int
) -> tuple[tuple[str, str, int], ...]:
    """``Job.missing`` after a ``RunMissingNoted`` (the fold, shared with :mod:`scheduler.evolve`):
    the entry of ``(run, name)`` set to ``at_ms`` or removed; entries of other runs dropped."""
    kept = tuple(e for e in missing if e[0] == run and e[1] != name)
    if is_missing:
        kept += ((run, name, at_ms),)
    return kept


def _since(job: Job, name: str) -> int | None:
    for run, node, since in job.missing:
        if run == job.run_sluid and node == name:
            return since
    return None


def jobs_on(state: ShardState, name: str) -> list[Job]:
    """The running jobs holding node ``name`` and the COMPLETING jobs awaiting its epilog, in
    job id order (one scan of the running and completing jobs: ~1 ms at 10,000)."""
    every = state.jobs
    jobs = [job for s in state.running if name in (job := every[s]).nodes]
    jobs += [job for s in state.completing if name in (job := every[s]).completing]
    return sorted(jobs, key=lambda job: job.job_id)


def decide_missing_runs(
    state: ShardState, node: Node, req: NodeResponding, st: Stamper, jobs: list[Job]
) -> list[Fact]:
    """The facts the heartbeat in ``req`` decides about the runs held on ``node`` (the module),
    ``jobs`` being :func:`jobs_on` the node."""
    if not jobs:
        return []
    listed, exited = frozenset(req.runs), frozenset(req.exited)
    sent_ms = req.sent_ms or req.time_ms
    grace_ms = state.config.health.missing_run_grace_s * 1000
    facts: list[Fact] = []
    for job in jobs:
        run = job.run_sluid
        if job.is_running:
            if job.start_ms > sent_ms - START_MARGIN_MS:
                continue  # started after the heartbeat, or just before
            missing = run not in listed or run in exited
        else:
            missing = run not in listed
        since = _since(job, node.name)
        if not missing:
            if since is not None:
                facts.append(_noted(st, job, node, missing=False, sent_ms=sent_ms))
        elif since is None:
            facts.append(_noted(st, job, node, missing=True, sent_ms=sent_ms))
        elif st.time_ms - since >= grace_ms:
            facts += _purge(state, job, node, (st.time_ms - since) / 1000, st)
    return facts


def _noted(st: Stamper, job: Job, node: Node, *, missing: bool, sent_ms: int) -> RunMissingNoted:
    return RunMissingNoted(
        **st.meta(),
        job_sluid=job.job_sluid,
        run_sluid=job.run_sluid,
        node_sluid=node.node_sluid,
        name=node.name,
        missing=missing,
        heartbeat_ms=sent_ms,
    )


def _purge(state: ShardState, job: Job, node: Node, missing_s: float, st: Stamper) -> list[Fact]:
    reason = missing_reason(node.name, missing_s)
    if job.is_completing:
        detail = f"Epilog not reported: {reason}"
        return epilog_done(state, job, (node.node_sluid, node.name), (True, detail), st)
    kill = job.kill_reason
    if kill in (JobState.REQUEUED, JobState.REQUEUE_HOLD):
        final = JobState.REQUEUED
    else:
        final = kill or JobState.NODE_FAIL  # a kill in progress wins, as over a node failure
    end = (final, 0)
    outcome = end_outcome(state, job, kill, end)
    ended = JobEnded(
        **st.meta(),
        job_sluid=job.job_sluid,
        job_id=job.job_id,
        run_sluid=job.run_sluid,
        state=final,
        reason=reason,
        **outcome.fact_fields(),
    )
    return [ended, *ending_facts(state, job, kill, end, st)]
