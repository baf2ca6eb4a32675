"""Node commands: what the shard tells node daemons to do (``sluice.node-commands``).

:func:`node_commands` derives them from a fact and the state *after* evolving that fact, so a
replay of the ledger can re-derive every command that was sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler.facts import Fact, JobEnded, JobStarted, RunKillRequested
from scheduler.spec import Segment
from scheduler.state import ShardState

TERMINATE = "TERMINATE"
"""The KillRun reason sent to every node of a run that has ended (Slurm's TERMINATE_JOB)."""

__all__ = ["KillRun", "LaunchRun", "NodeCommand", "node_commands"]


def _no_env() -> Mapping[str, str]:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchRun:
    """Start one run on one node; the batch host runs the command."""

    job_sluid: str
    job_id: int
    run_sluid: str
    node_sluid: str
    node_name: str
    batch_host: bool
    nodes: tuple[str, ...]
    segments: tuple[Segment, ...] = ()
    restart_count: int
    previous_run_sluid: str = ""
    user: str
    partition: str
    name: str
    command: tuple[str, ...]
    workdir: str
    env: Mapping[str, str] = field(default_factory=_no_env)
    output: str
    error: str
    time_limit_s: int
    issued_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class KillRun:
    """Kill one run on one node."""

    job_sluid: str
    run_sluid: str
    node_sluid: str
    node_name: str
    reason: str
    issued_ms: int


NodeCommand = LaunchRun | KillRun
"""Everything written to ``sluice.node-commands``."""


def node_commands(state: ShardState, fact: Fact) -> list[LaunchRun | KillRun]:
    """The commands a fact implies; ``state`` is the state after evolving ``fact``.

    ``JobStarted`` → one ``LaunchRun`` per node, in allocation order, the first node being the
    batch host. ``RunKillRequested`` → one ``KillRun`` per listed node. ``JobEnded`` of a run →
    one ``KillRun`` (``TERMINATE``) per node of the run. Anything else → none.
    """
    if isinstance(fact, JobStarted):
        return _launches(state, fact)
    if isinstance(fact, RunKillRequested):
        return _kills(state, fact.job_sluid, fact.run_sluid, fact.nodes, fact.reason, fact.time_ms)
    if isinstance(fact, JobEnded) and fact.run_sluid:
        # Slurm's TERMINATE_JOB: every node of the ended run kills what is left of it and runs
        # its epilog; the node stays COMPLETING for the run until it reports the epilog.
        job = state.jobs.get(fact.job_sluid)
        nodes = job.nodes if job is not None and job.run_sluid == fact.run_sluid else ()
        return _kills(state, fact.job_sluid, fact.run_sluid, nodes, TERMINATE, fact.time_ms)
    return []


def _kills(
    state: ShardState,
    job_sluid: str,
    run_sluid: str,
    nodes: tuple[str, ...],
    reason: str,
    time_ms: int,
) -> list[LaunchRun | KillRun]:
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


def _launches(state: ShardState, fact: JobStarted) -> list[LaunchRun | KillRun]:
    job = state.jobs.get(fact.job_sluid)
    spec = job.spec if job is not None else None
    previous = job.previous_run_sluid if job is not None else ""
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
            output=spec.output if spec else "",
            error=spec.error if spec else "",
            time_limit_s=fact.time_limit_s,
            issued_ms=fact.time_ms,
        )
        for position, (name, sluid) in enumerate(zip(fact.nodes, fact.node_sluids, strict=True))
    ]


def _node_sluids(state: ShardState, job_sluid: str, names: tuple[str, ...]) -> list[str]:
    job = state.jobs.get(job_sluid)
    by_job = dict(zip(job.nodes, job.node_sluids, strict=True)) if job is not None else {}
    return [by_job.get(name) or state.node_sluid_by_name(name) for name in names]
