"""Job steps (Slurm's ``srun`` inside an allocation): decided and closed by the core.

- ``StartStep`` (from the job's owner, sealed like any request) → ``StepStarted`` with the next
  step id of the run, when the job is RUNNING that run, every named node belongs to it and the
  step gets its share of the job's resources now (:mod:`scheduler.jobs.step_alloc`: steps do not
  share CPUs, memory or GPUs unless ``--overlap``); ``StepPending`` when it fits the job but
  other steps hold what it needs (it starts, by :func:`scheduler.jobs.step_waits.waits_started`,
  in the decision that ends the step freeing it); otherwise a ``RequestDenied`` that says why
  (``NoSuchRun``, ``NotInAllocation``, ``InvalidStep``; Slurm's errors for a step that can never
  fit: ``TooManyRequestedCpus`` "More processors requested than permitted",
  ``InvalidTaskMemory``, ``InvalidGres``). A repeated ``StartStep`` (the
  same step SLUID and ``io_token``) decides nothing; the SLUID of an open step with another
  ``io_token`` is another srun's (two sruns minted it in the same millisecond, 1 in 512 times):
  ``StepSluidInUse``, and that srun starts again under a new SLUID. Every refusal's detail ends
  with ``(step SLUID)``, so each srun of a job tells its own. ``node_commands`` turns the fact
  into one ``LaunchStep`` per node, so a user can start tasks only on the nodes the shard gave the
  run.
- ``ReportStepExit`` (from a node of the step, a node credential) → ``StepTasksExited``; the
  step ends (``StepEnded``) when every node has reported, or at once when a task failed — the
  nodes still running then get a ``KillStep``. A ``fenced`` report (the node's daemon was cut
  off from the broker and its supervisors killed the tasks) ends the step ``NODE_FAIL``, as a
  step on a failed node, not ``FAILED``.
- The end of the run (``JobEnded``) ends its open steps, waiting ones too (CANCELLED), a failed
  node the steps running on it (NODE_FAIL): :func:`steps_closed_by`, applied by
  :func:`scheduler.decide` to every decision.
- ``CancelJob`` naming a step (``scancel ID.STEP``; srun aborted by a second Ctrl-C) → that
  step ends ``CANCELLED`` (a ``KillStep`` to each node still running it) and the job runs on;
  with a signal (``scancel -s SIG ID.STEP``; srun passing a signal on) the step's tasks alone
  get it (:func:`scheduler.jobs.signals.signal_step`). A step that is not running in the job's
  current run is refused (``NoSuchStep``, Slurm's "Invalid job id specified"); a waiting one is
  cancelled (srun's Ctrl-C before its step was created), never signalled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from scheduler.jobs.signals import SIGKILL, signal_step
from scheduler.jobs.step_alloc import Never, Placement, ask_of, place
from scheduler.records import (
    CancelJob,
    Fact,
    JobEnded,
    NodeFailed,
    ReportStepExit,
    RequestDenied,
    StartStep,
    StepEnded,
    StepPending,
    StepStarted,
    StepTasksExited,
)
from scheduler.shard.model import Job, Step, job_with
from scheduler.shard.reasons import JobState
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from schemas.step_input import NAMED_INPUTS, input_task

__all__ = ["MAX_LAUNCH_BYTES", "MAX_STEP_COUNT", "MAX_TASKS_PER_NODE", "STEP_FOLDS", "StepDenial",
           "decide_start_step", "decide_step_cancel", "decide_step_exit", "kept_bytes",
           "launch_bytes", "pending", "started", "started_fact", "step_ended", "steps_closed_by",
           "tasks_exited"]

MAX_TASKS_PER_NODE = 4096
"""More tasks than this on one node is refused (``InvalidStep``)."""
MAX_WAITING_STEPS = 256
"""The most steps that may wait at once in one job: each is kept whole in the job's state
(srun's environment among it, a few kB) and the job's row is written again with every batch
that touches it; Slurm keeps none (its srun retries), and caps a job's steps (MaxStepCount)."""
MAX_STEP_COUNT = 40_000
"""Slurm's ``MaxStepCount`` (its default): a job's step ids stop there, and a ``StartStep``
once the job has started that many is refused ``StepLimit``. The running steps are kept in the
job's state, which every step start copies and every batch touching the job writes: 20,000
running ``--overlap`` steps cost 2 ms a start and a 1.2 MB row (red team, 2026-12-07)."""
MAX_WAITING_BYTES = 4 << 20
"""The most text (command, working directory, environment, …) the waiting steps of one job
keep, together: a step that would take them past it waits only when no other step waits
(``StepLimit`` otherwise). 256 steps of a 16 kB environment fit; 256 of srun's largest (a 1 MB
request) made a 230 MB job row, pickled and written whole again by every batch touching the
job (red team, 2026-12-07)."""


MAX_LAUNCH_BYTES = 64 << 20
"""The most bytes of its own a step may have sent to its nodes, together: one ``LaunchStep``
per node carries the step's command, working directory, environment and node list, so a step
of ``b`` such bytes on ``n`` nodes writes ``b * n`` into the node commands, in the shard's one
transaction (a 1 MB srun on 256 nodes: 256 MB; red team, 2026-12-07). Past it the step is
refused ``StepTooLarge``: a 1 MB srun reaches 64 nodes, a 16 kB environment (a large login's)
about 2,000 nodes of short names (the node list, sent to each node, counts too). Slurm sends
each node the environment too (srun's launch fans out over a tree of slurmds, ``TreeWidth``),
and refuses nothing for its size there."""


class StepDenial:
    """Named reasons of a refused ``StartStep``."""

    NO_SUCH_RUN = "NoSuchRun"
    NOT_IN_ALLOCATION = "NotInAllocation"
    INVALID_STEP = "InvalidStep"
    NOT_OWNER = "NotOwner"
    NO_SUCH_STEP = "NoSuchStep"
    STEP_SLUID_IN_USE = "StepSluidInUse"
    TOO_MANY_CPUS = "TooManyRequestedCpus"
    STEP_LIMIT = "StepLimit"
    STEP_TOO_LARGE = "StepTooLarge"


def _denied(st: Stamper, req: StartStep, reason: str, detail: str) -> list[Fact]:
    return [RequestDenied(**st.meta(), request="StartStep", subject_sluid=req.job_sluid,
                          requester=req.user, reason=reason,
                          detail=f"{detail} (step {req.step_sluid[:32]})")]


def _problem(job: Job, req: StartStep) -> tuple[str, str] | None:
    if not job.is_running or job.run_sluid != req.run_sluid:
        return StepDenial.NO_SUCH_RUN, (f"job {job.job_id} is not running run {req.run_sluid}"
                                        " (steps start inside a running allocation)")
    allocated = set(job.nodes)  # a set: a request may name 100,000 nodes of a large job
    outside = [n for n in req.nodes if n not in allocated]
    if outside:
        return StepDenial.NOT_IN_ALLOCATION, (f"{','.join(outside[:4])} not allocated to job "
                                              f"{job.job_id}")
    if not req.nodes or len(set(req.nodes)) != len(req.nodes):
        return StepDenial.INVALID_STEP, "a step names each of its nodes once, at least one"
    if len(req.tasks_per_node) != len(req.nodes) or any(
            not 1 <= t <= MAX_TASKS_PER_NODE for t in req.tasks_per_node):
        return StepDenial.INVALID_STEP, (f"every node of a step runs 1 to {MAX_TASKS_PER_NODE}"
                                         " tasks")
    if not req.command or req.cpus_per_task < 1:
        return StepDenial.INVALID_STEP, "a step needs a command and at least one CPU per task"
    if req.mem_per_node_mb < 0 or req.gpus_per_node < -1:
        return StepDenial.INVALID_STEP, "a step's memory and GPUs cannot be negative"
    if not valid_input(req.input, sum(req.tasks_per_node)):
        return StepDenial.INVALID_STEP, (f"--input {req.input[:40]!r}: none, all, pty or a task"
                                         " id of the step")
    sent = launch_bytes(req) * len(req.nodes)
    if sent > MAX_LAUNCH_BYTES:
        return StepDenial.STEP_TOO_LARGE, (
            f"the step's command, environment and node list ({launch_bytes(req)} bytes) sent to "
            f"each of its {len(req.nodes)} nodes make {sent} bytes, more than "
            f"{MAX_LAUNCH_BYTES}: export less of the environment (srun --export) or use fewer "
            f"nodes")
    return None


def kept_bytes(req: StartStep | StepPending) -> int:
    """The text a waiting step keeps in its job's state (characters of its strings)."""
    return (sum(map(len, req.command)) + len(req.workdir) + len(req.io_address)
            + len(req.io_token) + len(req.input) + sum(map(len, req.nodes))
            + sum(len(k) + len(v) for k, v in req.env.items()))


def launch_bytes(req: StartStep) -> int:
    """What each ``LaunchStep`` of ``req`` carries of the step's own (:func:`kept_bytes`, and
    a few bytes a node's task count)."""
    return kept_bytes(req) + 4 * len(req.tasks_per_node)


def valid_input(value: str, tasks: int) -> bool:
    """Whether ``value`` is a step's ``input`` (srun's ``--input``/``--pty``) for ``tasks``."""
    task = input_task(value)
    return value in NAMED_INPUTS or (task is not None and task < tasks)


def decide_start_step(state: ShardState, req: StartStep, st: Stamper) -> list[Fact]:
    """StartStep → StepStarted | RequestDenied | nothing (another shard's job, a repeat)."""
    job = state.jobs.get(req.job_sluid)
    if job is None:
        return []
    if not state.may_act_on(req.user, job):
        return _denied(st, req, StepDenial.NOT_OWNER,
                       f"{req.user} may not start steps in job {job.job_id}")
    same = next((s for s in job.steps if s.step_sluid == req.step_sluid), None)
    if same is not None:
        if same.io_token in ("", req.io_token):
            return []  # the same request again
        return _denied(st, req, StepDenial.STEP_SLUID_IN_USE,
                       f"step {job.job_id}.{same.step_id} of another srun has this SLUID")
    problem = _problem(job, req)
    if problem is not None:
        return _denied(st, req, *problem)
    if job.next_step_id >= MAX_STEP_COUNT:
        return _denied(st, req, StepDenial.STEP_LIMIT,
                       f"Step limit reached for this job: job {job.job_id} started "
                       f"{MAX_STEP_COUNT} steps (MaxStepCount)")
    outcome = place(job, ask_of(req), job.steps)
    if isinstance(outcome, Never):
        return _denied(st, req, outcome.reason, outcome.detail)
    if isinstance(outcome, Placement):
        return [started_fact(st, job, req, outcome, job.next_step_id)]
    waiting = [s.waiting for s in job.steps if s.waiting is not None]
    if len(waiting) >= MAX_WAITING_STEPS:
        return _denied(st, req, StepDenial.STEP_LIMIT,
                       f"Step limit reached for this job: {MAX_WAITING_STEPS} steps of job "
                       f"{job.job_id} already wait for its resources")
    kept = sum(map(kept_bytes, waiting))
    if waiting and kept + kept_bytes(req) > MAX_WAITING_BYTES:
        return _denied(st, req, StepDenial.STEP_LIMIT,
                       f"Step limit reached for this job: the {len(waiting)} steps of job "
                       f"{job.job_id} that wait for its resources keep {kept} bytes, and this "
                       f"one would take them past {MAX_WAITING_BYTES}")
    return [StepPending(
        **st.meta(), job_sluid=job.job_sluid, job_id=job.job_id, run_sluid=job.run_sluid,
        step_sluid=req.step_sluid, user=job.spec.user, nodes=req.nodes,
        tasks_per_node=req.tasks_per_node, cpus_per_task=req.cpus_per_task,
        command=req.command, workdir=req.workdir, env=req.env, io_address=req.io_address,
        io_token=req.io_token, input=req.input, exact=req.exact, overlap=req.overlap,
        pick_nodes=req.pick_nodes, mem_per_node_mb=req.mem_per_node_mb,
        gpus_per_node=req.gpus_per_node, reason=outcome,
    )]


def started_fact(st: Stamper, job: Job, req: StartStep | StepPending, placement: Placement,
                 step_id: int, waited: bool = False) -> StepStarted:
    """The ``StepStarted`` of ``req`` placed in ``job`` as ``placement``, numbered ``step_id``."""
    return StepStarted(
        **st.meta(), job_sluid=job.job_sluid, job_id=job.job_id, run_sluid=job.run_sluid,
        step_sluid=req.step_sluid, step_id=step_id, user=job.spec.user,
        nodes=placement.nodes, tasks_per_node=placement.tasks_per_node,
        cpus_per_task=req.cpus_per_task, command=req.command, workdir=req.workdir, env=req.env,
        io_address=req.io_address, io_token=req.io_token, input=req.input,
        alloc_cpus=placement.cpus, alloc_mem_mb=placement.mem_mb, alloc_gpus=placement.gpus,
        overlap=req.overlap, waited=waited,
    )


def decide_step_cancel(state: ShardState, req: CancelJob, st: Stamper) -> list[Fact]:
    """A ``CancelJob`` naming one step → StepEnded(CANCELLED) | RunSignalled (with a signal)
    | RequestDenied | nothing (another shard's job)."""
    job = state.jobs.get(req.job_sluid)
    if job is None:
        return []
    if not state.may_act_on(req.user, job):
        return _refused(st, req, StepDenial.NOT_OWNER,
                        f"{req.user} may not cancel steps of job {job.job_id}")
    step = next((s for s in job.steps if s.step_sluid == req.step_sluid), None)
    if step is None or not job.is_running or job.kill_reason:
        return _refused(st, req, StepDenial.NO_SUCH_STEP,
                        f"Invalid job id specified: job {job.job_id} runs no step "
                        f"{req.step_sluid[:32]} (it ended, or belongs to another run)")
    if req.signal and req.signal != SIGKILL and step.waiting is None:
        return signal_step(state, req, job, step, st)
    if req.signal and req.signal != SIGKILL:
        return _refused(st, req, StepDenial.NO_SUCH_STEP,
                        f"Invalid job id specified: step {req.step_sluid[:32]} of job "
                        f"{job.job_id} waits for resources: it has no tasks to signal")
    left = tuple(n for n in step.nodes if n not in step.exited)
    return [StepEnded(**st.meta(), job_sluid=job.job_sluid, job_id=job.job_id,
                      run_sluid=job.run_sluid, step_sluid=step.step_sluid, step_id=step.step_id,
                      state=JobState.CANCELLED, exit_code=0, signal=0,
                      reason=f"cancelled by {req.user or 'a request'}", unfinished_nodes=left)]


def _refused(st: Stamper, req: CancelJob, reason: str, detail: str) -> list[Fact]:
    return [RequestDenied(**st.meta(), request="CancelJob", subject_sluid=req.job_sluid,
                          requester=req.user, reason=reason, detail=detail)]


def decide_step_exit(state: ShardState, req: ReportStepExit, st: Stamper) -> list[Fact]:
    """A node's report that its tasks of a step ended → StepTasksExited, then StepEnded when
    that was the last node or a task failed. Reports for steps no longer open decide nothing."""
    job = state.jobs.get(req.job_sluid)
    if job is None or job.run_sluid != req.run_sluid:
        return []
    step = next((s for s in job.steps if s.step_sluid == req.step_sluid), None)
    if step is None or req.node_name not in step.nodes or req.node_name in step.exited:
        return []
    ids: dict[str, Any] = {"job_sluid": job.job_sluid, "job_id": job.job_id,
                           "run_sluid": job.run_sluid, "step_sluid": step.step_sluid,
                           "step_id": step.step_id}
    facts: list[Fact] = [StepTasksExited(**st.meta(), **ids, node_name=req.node_name,
                                         exit_code=req.exit_code, signal=req.signal)]
    left = tuple(n for n in step.nodes if n not in step.exited and n != req.node_name)
    failed = req.exit_code != 0 or req.signal != 0 or req.fenced
    if failed:
        how = f"signal {req.signal}" if req.signal else f"exit code {req.exit_code}"
        detail = (f"node {req.node_name} was fenced: its tasks were killed ({how})"
                  if req.fenced else f"a task on {req.node_name} ended with {how}")
        if req.detail:
            detail += f" ({req.detail})"
        end = JobState.NODE_FAIL if req.fenced else JobState.FAILED
        facts.append(StepEnded(**st.meta(), **ids, state=end,
                               exit_code=req.exit_code, signal=req.signal, reason=detail,
                               unfinished_nodes=left))
    elif not left:
        facts.append(StepEnded(**st.meta(), **ids, state=JobState.COMPLETED, exit_code=0,
                               signal=0, reason="", unfinished_nodes=()))
    return facts


def steps_closed_by(state: ShardState, request: object, facts: list[Fact],
                    st: Stamper) -> list[Fact]:
    """The StepEnded facts that ``facts`` (decided for ``request``) imply: the open steps of a
    run that ended, and, for a failed node, the steps running on it. Cheap when neither: no
    scan of the running jobs for an ordinary request."""
    closing: dict[str, tuple[Job, str, str]] = {}
    for fact in facts:
        if isinstance(fact, JobEnded) and fact.run_sluid:
            job = state.jobs.get(fact.job_sluid)
            if job is not None and job.run_sluid == fact.run_sluid and job.steps:
                end = JobState.NODE_FAIL if fact.state == JobState.NODE_FAIL else (
                    JobState.CANCELLED)
                closing[job.job_sluid] = (job, end, f"the run ended {fact.state}")
    if isinstance(request, NodeFailed):
        candidates = _jobs_with_steps(state)
    elif closing:
        candidates = [entry[0] for entry in closing.values()]
    else:  # the usual request: no run with open steps ended
        return []
    ended: list[Fact] = []
    for job in sorted(candidates, key=lambda j: j.job_id):
        for step in job.steps:
            if isinstance(request, NodeFailed) and request.name in step.nodes:
                why = (JobState.NODE_FAIL, f"node {request.name} failed")
            elif job.job_sluid in closing:
                why = closing[job.job_sluid][1:]
            else:
                continue
            left = tuple(n for n in step.nodes if n not in step.exited)
            ended.append(StepEnded(
                **st.meta(), job_sluid=job.job_sluid, job_id=job.job_id,
                run_sluid=job.run_sluid, step_sluid=step.step_sluid, step_id=step.step_id,
                state=why[0], exit_code=0, signal=0, reason=why[1], unfinished_nodes=left))
    return ended


def _jobs_with_steps(state: ShardState) -> list[Job]:
    return [j for j in (state.jobs.get(s) for s in state.running) if j and j.steps]


def started(job: Job, fact: StepStarted) -> Job | None:
    """``job`` with the step of ``fact`` running, in the place of its waiting self if it waited
    (None when the fact is not about its run, or the step runs already)."""
    if job.run_sluid != fact.run_sluid or any(
            s.step_sluid == fact.step_sluid and s.waiting is None for s in job.steps):
        return None
    step = Step(step_sluid=fact.step_sluid, step_id=fact.step_id, nodes=fact.nodes,
                io_token=fact.io_token, cpus=fact.alloc_cpus, mem_mb=fact.alloc_mem_mb,
                gpus=fact.alloc_gpus, overlap=fact.overlap)
    others = tuple(s for s in job.steps if s.step_sluid != fact.step_sluid)
    return _with_steps(job, (*others, step), max(job.next_step_id, fact.step_id + 1))


def pending(job: Job, fact: StepPending) -> Job | None:
    """``job`` with the step of ``fact`` waiting (None when the fact is not about its run, or
    the step is known)."""
    if job.run_sluid != fact.run_sluid or any(s.step_sluid == fact.step_sluid
                                              for s in job.steps):
        return None
    step = Step(step_sluid=fact.step_sluid, step_id=-1, nodes=(), io_token=fact.io_token,
                waiting=fact)
    return _with_steps(job, (*job.steps, step), job.next_step_id)


def tasks_exited(job: Job, fact: StepTasksExited) -> Job | None:
    """``job`` with ``fact``'s node marked as done in its step."""
    steps = tuple(
        replace(s, exited=(*s.exited, fact.node_name))
        if s.step_sluid == fact.step_sluid and fact.node_name not in s.exited else s
        for s in job.steps
    )
    return None if steps == job.steps else _with_steps(job, steps, job.next_step_id)


def step_ended(job: Job, fact: StepEnded) -> Job | None:
    """``job`` without the step of ``fact``."""
    steps = tuple(s for s in job.steps if s.step_sluid != fact.step_sluid)
    return None if steps == job.steps else _with_steps(job, steps, job.next_step_id)


def _with_steps(job: Job, steps: tuple[Step, ...], next_id: int) -> Job:
    return job_with(job, steps=steps, next_step_id=next_id)


STEP_FOLDS: dict[type, Callable[[Job, Any], Job | None]] = {
    StepPending: pending, StepStarted: started, StepTasksExited: tasks_exited,
    StepEnded: step_ended,
}
"""The step facts' folds (:mod:`scheduler.evolve`): each changes the job's steps, or None."""
