"""Waiting job steps start when the steps holding their resources end.

A step that fits its job but not now (``StepPending``) waits in the job's steps. Whenever a
decision ends steps of a running job (``StepEnded``: the last node's report, a failed task, a
cancel, a failed node), :func:`waits_started`, applied by :func:`scheduler.decide` to every
decision, starts the job's waiting steps that fit beside what still runs: in the order they
began to wait, each taking its share before the next is tried (a later step that fits may
start while an earlier, larger one still waits, as any of Slurm's retrying sruns can win the
freed CPUs). Each gets the run's next step id then, as Slurm numbers a step when it is created.
The decision is made from the facts alone (the job's steps after the facts of the same
decision), so a replay of the ledger starts the same steps with the same ids and nodes.
"""

from __future__ import annotations

from scheduler.jobs.step_alloc import Placement, ask_of, held_by_steps, hold, place
from scheduler.jobs.steps import started_fact
from scheduler.records import Fact, JobEnded, StepEnded
from scheduler.shard.model import Step
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["waits_started"]


def waits_started(state: ShardState, facts: list[Fact], st: Stamper) -> list[Fact]:
    """The ``StepStarted`` facts of waiting steps that ``facts`` (one decision's) free room for.
    Cheap when the decision ends no step: no scan of the jobs."""
    ended: dict[str, set[str]] = {}
    gone_runs: set[str] = set()
    for fact in facts:
        if isinstance(fact, StepEnded):
            ended.setdefault(fact.job_sluid, set()).add(fact.step_sluid)
        elif isinstance(fact, JobEnded):
            gone_runs.add(fact.job_sluid)
    started: list[Fact] = []
    for job_sluid in sorted(ended.keys() - gone_runs):
        job = state.jobs.get(job_sluid)
        if job is None or not job.is_running or job.kill_reason:
            continue
        steps: list[Step] = [s for s in job.steps if s.step_sluid not in ended[job_sluid]]
        # what the running steps hold, counted once and kept as waiting steps start: a job
        # with thousands of waiting sruns (a loop of 'srun ... &') cost one walk of every
        # step per waiting step at each step end, seconds of the shard's time for everyone
        held = held_by_steps(steps)
        next_id = job.next_step_id
        for index, step in enumerate(steps):
            if step.waiting is None:
                continue
            placement = place(job, ask_of(step.waiting), steps, held=held)
            if not isinstance(placement, Placement):
                continue
            fact = started_fact(st, job, step.waiting, placement, next_id, waited=True)
            started.append(fact)
            next_id += 1
            steps[index] = Step(step_sluid=step.step_sluid, step_id=fact.step_id,
                                nodes=fact.nodes, io_token=fact.io_token, cpus=fact.alloc_cpus,
                                mem_mb=fact.alloc_mem_mb, gpus=fact.alloc_gpus,
                                overlap=fact.overlap)
            if not fact.overlap:
                hold(held, placement)
    return started
