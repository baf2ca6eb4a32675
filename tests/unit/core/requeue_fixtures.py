"""Fixtures for the node-failure and requeue tests: running jobs, reports and expected facts."""

from __future__ import annotations

from typing import Any

from scheduler import (
    JobEnded,
    JobExpediting,
    JobRequeued,
    JobSpec,
    NodeEpilogCompleted,
    NodeFailed,
    ReportEpilog,
    ReportJobExit,
    ReportProlog,
    RunKillRequested,
    evolve,
)
from scheduler.records import Fact
from tests.unit.core.gwt import T0, M, Scenario, node_sluid, queued, restamp, sluid
from tests.unit.core.test_foundation import started, state_changed

EXPEDITE_ON = "SlurmctldParameters: enable_expedited_requeue\n"
J1, J2, J3 = sluid(1), sluid(2), sluid(3)


def run_of(job_id: int) -> str:
    """The run SLUID ``started`` gives job ``job_id``."""
    return sluid(900 + job_id)


def running(job_sluid: str, job_id: int, names: tuple[str, ...], job_spec: JobSpec) -> list[Fact]:
    """A job queued and started on ``names`` (its nodes announced ALLOCATED)."""
    return [
        queued(job_sluid, job_spec),
        started(job_sluid, job_id, names),
        *(state_changed(n, "ALLOCATED") for n in names),
    ]


def node_failed(name: str, reason: str = "Not responding") -> NodeFailed:
    return NodeFailed(node_sluid=node_sluid(name), name=name, reason=reason, time_ms=T0)


def epilog(job_sluid: str, job_id: int, name: str, ok: bool = True, **extra: Any) -> ReportEpilog:
    return ReportEpilog(
        job_sluid=job_sluid,
        run_sluid=run_of(job_id),
        node_sluid=node_sluid(name),
        node_name=name,
        ok=ok,
        **extra,
    )


def prolog_failed(job_sluid: str, job_id: int, name: str) -> ReportProlog:
    return ReportProlog(
        job_sluid=job_sluid,
        run_sluid=run_of(job_id),
        node_sluid=node_sluid(name),
        node_name=name,
        ok=False,
        exit_code=1,
        detail="prolog exited 1",
    )


def exited(job_sluid: str, job_id: int, name: str, code: int, signal: int = 0) -> ReportJobExit:
    return ReportJobExit(
        job_sluid=job_sluid,
        run_sluid=run_of(job_id),
        node_sluid=node_sluid(name),
        node_name=name,
        exit_code=code,
        signal=signal,
    )


def kill(job_sluid: str, job_id: int, reason: str, names: tuple[str, ...]) -> RunKillRequested:
    return RunKillRequested(
        **M, job_sluid=job_sluid, run_sluid=run_of(job_id), reason=reason, nodes=names
    )


def ended(job_sluid: str, job_id: int, state: str, reason: str = "", **extra: Any) -> JobEnded:
    return JobEnded(
        **M,
        job_sluid=job_sluid,
        job_id=job_id,
        run_sluid=run_of(job_id),
        state=state,
        reason=reason,
        **extra,
    )


def expediting(job_sluid: str, job_id: int, trigger: str) -> JobExpediting:
    return JobExpediting(**M, job_sluid=job_sluid, run_sluid=run_of(job_id), trigger=trigger)


def epilog_done(
    job_sluid: str, job_id: int, name: str, ok: bool = True, detail: str = ""
) -> NodeEpilogCompleted:
    return NodeEpilogCompleted(
        **M,
        node_sluid=node_sluid(name),
        name=name,
        job_sluid=job_sluid,
        run_sluid=run_of(job_id),
        ok=ok,
        detail=detail,
    )


def requeued(
    job_sluid: str,
    job_id: int,
    reason: str,
    *,
    expedite: bool = False,
    held: bool = False,
    begin_time_ms: int = 0,
    restart_count: int = 1,
) -> JobRequeued:
    return JobRequeued(
        **M,
        job_sluid=job_sluid,
        job_id=job_id,
        run_sluid=run_of(job_id),
        reason=reason,
        expedite=expedite,
        held=held,
        begin_time_ms=begin_time_ms,
        restart_count=restart_count,
    )


AFTER_DELAY = T0 + 121_000
"""A normal requeue decided at T0 is eligible after requeue_delay (120 s) + 1 s."""


def node_back(scenario: Scenario, name: str) -> None:
    """Node ``name`` announced IDLE again (folded into the scenario's state)."""
    scenario.state = evolve(scenario.state, restamp(scenario.state, state_changed(name, "IDLE")))
