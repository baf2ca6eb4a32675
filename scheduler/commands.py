"""Node commands: what the shard tells node daemons to do (``sluice.node-commands``).

:func:`node_commands` derives them from a fact and the state *after* evolving that fact, so a
replay of the ledger can re-derive every command that was sent. The records themselves
(``LaunchRun``, ``KillRun``, ``SignalRun``, ``SetRunLimit``, ``LaunchStep``, ``KillStep``,
``RequestRegistration``) are generated
into :mod:`scheduler.records`.
"""

from __future__ import annotations

from scheduler.jobs.arrays import array_step, parse_array
from scheduler.nodes.registration_requests import registration_requests
from scheduler.records import (
    ConfigApplied,
    Fact,
    JobEnded,
    JobStarted,
    KillRun,
    KillStep,
    LaunchRun,
    LaunchStep,
    NodeCommand,
    NodeStateChanged,
    RequestDenied,
    RunKillRequested,
    RunSignalled,
    SetRunLimit,
    SignalRun,
    StepEnded,
    StepStarted,
    TimeLimitChanged,
)
from scheduler.shard.model import Job
from scheduler.shard.state import ShardState

TERMINATE = "TERMINATE"
"""The KillRun reason sent to every node of a run that has ended (Slurm's TERMINATE_JOB)."""

__all__ = ["TERMINATE", "node_commands"]


def node_commands(state: ShardState, fact: Fact) -> list[NodeCommand]:
    """The commands a fact implies; ``state`` is the state after evolving ``fact``.

    ``JobStarted`` → one ``LaunchRun`` per node, in allocation order, the first node being the
    batch host, the only one whose launch carries the batch script (as Slurm sends it with
    the batch host's launch alone: a 256 kB script on 256 nodes was 64 MB of node commands).
    ``RunKillRequested`` → one ``KillRun`` per listed node. ``RunSignalled`` → one
    ``SignalRun`` per listed node (each names the fact, so a node sends it once; a run that
    has ended since gets none: the shard no longer holds it). ``TimeLimitChanged`` → one
    ``SetRunLimit`` per node of the run (none once it has ended). ``JobEnded`` of a run →
    one ``KillRun`` (``TERMINATE``) per node of the run. ``StepStarted`` → one ``LaunchStep``
    per node of the step; ``StepEnded`` → one ``KillStep`` per node still running it.
    ``ConfigApplied`` (cluster) and ``NodeStateChanged`` to ``DOWN`` → one
    ``RequestRegistration`` per node whose registration was refused, and a ``RequestDenied`` of
    a registration under another node's SLUID one naming its holder
    (:mod:`scheduler.nodes.registration_requests`). Anything else → none.
    """
    if isinstance(fact, JobStarted):
        return list(_launches(state, fact))
    if isinstance(fact, StepStarted | StepEnded):
        return _step_commands(state, fact)
    if isinstance(fact, RunKillRequested):
        return list(_kills(state, fact.job_sluid, fact.run_sluid, fact.nodes, fact.reason,
                           fact.time_ms))
    if isinstance(fact, RunSignalled):
        return list(_signals(state, fact))
    if isinstance(fact, TimeLimitChanged):
        return list(_limits(state, fact))
    if isinstance(fact, ConfigApplied | NodeStateChanged | RequestDenied):
        return list(registration_requests(state, fact))
    if isinstance(fact, JobEnded) and fact.run_sluid:
        # Slurm's TERMINATE_JOB: every node of the ended run kills what is left of it and runs
        # its epilog; the node stays COMPLETING for the run until it reports the epilog.
        job = state.jobs.get(fact.job_sluid)
        nodes = job.nodes if job is not None and job.run_sluid == fact.run_sluid else ()
        return list(_kills(state, fact.job_sluid, fact.run_sluid, nodes, TERMINATE, fact.time_ms))
    return []


def _kills(
    state: ShardState,
    job_sluid: str,
    run_sluid: str,
    nodes: tuple[str, ...],
    reason: str,
    time_ms: int,
) -> list[KillRun]:
    sluids = _node_sluids(state, job_sluid, nodes)
    return [
        KillRun(
            job_sluid=job_sluid,
            run_sluid=run_sluid,
            node_sluid=sluid,
            node_name=name,
            reason=reason,
            issued_ms=time_ms,
        )
        for name, sluid in zip(nodes, sluids, strict=True)
        if sluid
    ]


def _signals(state: ShardState, fact: RunSignalled) -> list[SignalRun]:
    job = state.jobs.get(fact.job_sluid)
    if job is None or not job.is_running or job.run_sluid != fact.run_sluid:
        return []
    sluids = _node_sluids(state, fact.job_sluid, fact.nodes)
    return [
        SignalRun(job_sluid=fact.job_sluid, run_sluid=fact.run_sluid, node_sluid=sluid,
                  node_name=name, signal=fact.signal, scope=fact.scope,
                  signal_sluid=fact.event_sluid, issued_ms=fact.time_ms,
                  step_sluid=fact.step_sluid)
        for name, sluid in zip(fact.nodes, sluids, strict=True)
        if sluid
    ]


def _limits(state: ShardState, fact: TimeLimitChanged) -> list[SetRunLimit]:
    job = state.jobs.get(fact.job_sluid)
    if job is None or not job.is_running or job.run_sluid != fact.run_sluid:
        return []
    sluids = _node_sluids(state, fact.job_sluid, fact.nodes)
    return [
        SetRunLimit(job_sluid=fact.job_sluid, run_sluid=fact.run_sluid, node_sluid=sluid,
                    node_name=name, time_limit_s=fact.time_limit_s, issued_ms=fact.time_ms)
        for name, sluid in zip(fact.nodes, sluids, strict=True)
        if sluid
    ]


def _array_fields(state: ShardState, job: Job | None) -> dict[str, int]:
    """Slurm's SLURM_ARRAY_* values of an array task: the array's job id (its first task's),
    task id, count, lowest and highest task id and step, of the whole array as submitted (its
    ``--array`` text: the tasks got consecutive job ids in task order), as Slurm keeps them
    while tasks end and are purged; over the tasks the shard still holds only for a spec
    that no longer parses."""
    if job is None or not job.array_job_sluid:
        return {}
    parsed = parse_array(job.spec.array, _ANY_SIZE) if job.spec.array else None
    step = array_step(job.spec.array)
    if parsed is not None and job.array_task_id in parsed.task_ids:
        ids = parsed.task_ids
        first = job.job_id - ids.index(job.array_task_id)
        return {"array_job_id": first, "array_task_id": job.array_task_id,
                "array_task_count": len(ids), "array_task_min": ids[0],
                "array_task_max": ids[-1], "array_task_step": step}
    tasks = [state.jobs[s] for s in state.arrays.get(job.array_job_sluid, ()) if s in state.jobs]
    tasks = tasks or [job]
    held = [t.array_task_id for t in tasks]
    return {"array_job_id": min(t.job_id for t in tasks), "array_task_id": job.array_task_id,
            "array_task_count": len(tasks), "array_task_min": min(held),
            "array_task_max": max(held), "array_task_step": step}


_ANY_SIZE = 1 << 62  # MaxArraySize may have been lowered since the array was accepted


def _launches(state: ShardState, fact: JobStarted) -> list[LaunchRun]:
    job = state.jobs.get(fact.job_sluid)
    spec = job.spec if job is not None else None
    previous = job.previous_run_sluid if job is not None else ""
    current = job if job is not None and job.run_sluid == fact.run_sluid else None
    alloc = current.alloc if current is not None else ()
    # how long after the node is DOWN the job could start elsewhere: the run's fence horizon
    # (0, the safe default, without the run's job: fenced as an expedited job)
    restart_after = current.restart_after_ms if current is not None else 0
    array = _array_fields(state, job)
    return [
        LaunchRun(
            job_sluid=fact.job_sluid,
            job_id=fact.job_id,
            run_sluid=fact.run_sluid,
            node_sluid=sluid,
            node_name=name,
            batch_host=position == 0,
            nodes=fact.nodes,
            segments=fact.segments,
            restart_count=fact.restart_count,
            previous_run_sluid=previous,
            user=fact.user,
            partition=fact.partition,
            name=spec.name if spec else "",
            command=spec.command if spec else (),
            workdir=spec.workdir if spec else "",
            env=spec.env if spec else {},
            sealed_env=spec.sealed_env if spec else "",
            output=spec.output if spec else "",
            error=spec.error if spec else "",
            time_limit_s=fact.time_limit_s,
            cpus=fact.alloc_cpus[position] if position < len(fact.alloc_cpus) else 0,
            mem_mb=fact.alloc_mem_mb[position] if position < len(fact.alloc_mem_mb) else 0,
            issued_ms=fact.time_ms,
            script=spec.script if spec and position == 0 else "",  # the batch host's alone
            account=job.account if job else "",
            qos=job.qos if job else "",
            ntasks=spec.ntasks if spec else 1,
            cpus_per_task=spec.cpus_per_task if spec else 1,
            alloc_cpus=tuple(a[0] for a in alloc),
            alloc_mem_mb=tuple(a[1] for a in alloc),
            alloc_gpus=tuple(a[2] for a in alloc),
            submit_host=spec.submit_host if spec else "",
            restart_after_ms=restart_after,
            **array,
        )
        for position, (name, sluid) in enumerate(zip(fact.nodes, fact.node_sluids, strict=True))
    ]


def _step_commands(state: ShardState, fact: StepStarted | StepEnded) -> list[NodeCommand]:
    if isinstance(fact, StepEnded):
        names = fact.unfinished_nodes
        sluids = _node_sluids(state, fact.job_sluid, names)
        return [KillStep(job_sluid=fact.job_sluid, run_sluid=fact.run_sluid,
                         step_sluid=fact.step_sluid, step_id=fact.step_id, node_sluid=sluid,
                         node_name=name, reason=fact.state, issued_ms=fact.time_ms)
                for name, sluid in zip(names, sluids, strict=True) if sluid]
    sluids = _node_sluids(state, fact.job_sluid, fact.nodes)
    known = len(fact.alloc_cpus) == len(fact.nodes)  # a fact from before step allocations: no
    cpus = fact.alloc_cpus if known else (0,) * len(fact.nodes)
    gpus = fact.alloc_gpus if len(fact.alloc_gpus) == len(fact.nodes) else (-1,) * len(fact.nodes)
    return [LaunchStep(job_sluid=fact.job_sluid, job_id=fact.job_id, run_sluid=fact.run_sluid,
                       step_sluid=fact.step_sluid, step_id=fact.step_id, node_sluid=sluid,
                       node_name=name, nodes=fact.nodes, tasks_per_node=fact.tasks_per_node,
                       cpus_per_task=fact.cpus_per_task, command=fact.command,
                       workdir=fact.workdir, env=fact.env, io_address=fact.io_address,
                       io_token=fact.io_token, issued_ms=fact.time_ms, input=fact.input,
                       cpus=cpus[i], gpus=gpus[i], overlap=fact.overlap)
            for i, (name, sluid) in enumerate(zip(fact.nodes, sluids, strict=True)) if sluid]


def _node_sluids(state: ShardState, job_sluid: str, names: tuple[str, ...]) -> list[str]:
    job = state.jobs.get(job_sluid)
    by_job = dict(zip(job.nodes, job.node_sluids, strict=True)) if job is not None else {}
    return [by_job.get(name) or state.node_sluid_by_name(name) for name in names]
