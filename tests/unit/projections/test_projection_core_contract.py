"""The views show what the core's facts say: the same answer as the core on real facts.

The views apply no rule of the core: a ``JobEnded`` says whether the job is requeued
(``job_state``, ``requeue_reason``), which nodes it keeps (``held_nodes``, ``defer_release``),
a ``JobStarted`` what each node gives (``alloc_*``). These tests drive the real core
(``decide``/``schedule``/``evolve``) through the requeue scenarios, folding each decision's
facts (as the wire carries them) into the views and comparing after every decision: a job the
core holds COMPLETING is PENDING + COMPLETING in the views, an ended one shows its end, and every
node shows the state the core derives for it.
"""

from __future__ import annotations

from typing import Any

import pytest

from projections.stats import FINISHED
from projections.views import Views
from scheduler import (
    ApplyConfig,
    CancelJob,
    NodeFailed,
    RegisterNode,
    ReleaseJob,
    ReportEpilog,
    ReportJobExit,
    SubmitJob,
    decide,
    evolve,
    initial_state,
    node_state,
    schedule,
)
from scheduler.records import as_record
from tests.unit.core.gwt import CLUSTER, SHARD, T0, node_sluid, sluid, spec


class Core:
    """One shard of the real core and the views of its ledger, decision by decision."""

    def __init__(self, config: str, nodes: int) -> None:
        self.state = initial_state(SHARD, CLUSTER)
        self.views = Views()
        self.now = T0
        self.jobs = 0
        self.do(ApplyConfig(config_sluid=sluid(500), kind="cluster", text=config))
        for i in range(1, nodes + 1):
            self.do(RegisterNode(node_sluid=node_sluid(f"n{i}"), name=f"n{i}", cpus=4, mem_mb=0))

    def do(self, request: Any = None, after_ms: int = 1_000) -> list[str]:
        """Decide ``request`` (a scheduling pass when None), fold the facts into both, compare."""
        self.now += after_ms
        facts = (schedule(self.state, self.now) if request is None
                 else decide(self.state, request, self.now))
        for fact in facts:
            self.state = evolve(self.state, fact)
            self.views.apply(*as_record(fact))
        self.agree()
        return [type(f).__name__ for f in facts]

    def submit(self, **fields: Any) -> str:
        self.jobs += 1
        job = sluid(self.jobs, self.now)
        self.do(SubmitJob(job_sluid=job, spec=spec(**fields)))
        return job

    def run_of(self, job: str) -> tuple[str, tuple[str, ...]]:
        core = self.state.jobs[job]
        return core.run_sluid, core.nodes

    def exit(self, job: str, code: int) -> list[str]:
        run, names = self.run_of(job)
        return self.do(ReportJobExit(job_sluid=job, run_sluid=run, node_sluid=node_sluid(names[0]),
                                     node_name=names[0], exit_code=code))

    def epilogs(self, job: str, run: str, names: tuple[str, ...], ok: bool = True) -> None:
        for name in names:
            self.do(ReportEpilog(job_sluid=job, run_sluid=run, node_sluid=node_sluid(name),
                                 node_name=name, ok=ok, exit_code=0 if ok else 2))

    def agree(self) -> None:
        for sluid_, core in self.state.jobs.items():
            row = self.views.jobs[sluid_]
            if core.is_completing:  # the core's COMPLETING is Slurm's PENDING + COMPLETING
                assert (row["state"], "COMPLETING" in row["flags"]) == ("PENDING", True)
                assert row["requeue_reason"] == core.requeue_reason
            elif core.has_ended:
                assert (row["state"], row["flags"]) == (core.state, [])
                assert row["state"] in FINISHED
            else:
                assert row["state"] == core.state
                killing = core.is_running and bool(core.kill_reason)
                assert ("COMPLETING" in row["flags"]) == killing
            if core.is_pending:
                assert ("EXPEDITING" in row["flags"]) == core.expediting
                held = row["reason"] in ("JobHeldUser", "JobHeldAdmin")
                assert held == bool(core.hold), (row["reason"], core.hold)
        for name, row in self.views.nodes.items():
            assert row["state"] == node_state(self.state, name), name


EXPEDITE = "SlurmctldParameters: enable_expedited_requeue\nRequeueExit: 3\nRequeueExitHold: 4\n"


@pytest.mark.parametrize("policy", ["yes", "expedite", "no"])
def test_a_node_failure(policy: str) -> None:
    core = Core(EXPEDITE, 3)
    job = core.submit(nodes_min=2, requeue=policy)
    core.do()
    run, names = core.run_of(job)
    core.do(NodeFailed(node_sluid=node_sluid(names[0]), name=names[0], reason="", time_ms=0))
    core.epilogs(job, run, names[1:])
    core.do(after_ms=200_000)
    assert core.views.jobs[job]["state"] == ("NODE_FAIL" if policy == "no" else "RUNNING")


@pytest.mark.parametrize(("code", "end"), [(3, "PENDING"), (4, "PENDING"), (5, "FAILED"),
                                           (0, "COMPLETED")])
def test_an_exit_code(code: int, end: str) -> None:
    core = Core(EXPEDITE, 3)  # the node whose epilog fails is drained
    job = core.submit(nodes_min=2)
    core.do()
    run, names = core.run_of(job)
    core.exit(job, code)
    core.epilogs(job, run, names[:1], ok=False)
    core.epilogs(job, run, names[1:])
    assert core.views.jobs[job]["state"] == end
    if code == 4:
        assert core.views.jobs[job]["flags"] == ["SPECIAL_EXIT"]
        core.do(ReleaseJob(job_sluid=job))
        core.do(after_ms=200_000)
        assert core.views.jobs[job]["state"] == "RUNNING"


@pytest.mark.parametrize("epilog_ok", [True, False])
def test_a_non_zero_exit_of_an_expedite_job(epilog_ok: bool) -> None:
    core = Core(EXPEDITE, 2)
    job = core.submit(nodes_min=2, requeue="expedite")
    core.do()
    run, names = core.run_of(job)
    core.exit(job, 1)
    core.epilogs(job, run, names[:1], ok=epilog_ok)
    core.epilogs(job, run, names[1:])
    row = core.views.jobs[job]
    assert (row["state"], row["reason"] == "JobHeldUser") == ("PENDING", epilog_ok)


def test_a_cancel_while_the_requeue_waits() -> None:
    core = Core(EXPEDITE, 2)
    job = core.submit(nodes_min=2)
    core.do()
    run, names = core.run_of(job)
    core.exit(job, 3)
    core.epilogs(job, run, names[:1])
    core.do(CancelJob(job_sluid=job))
    core.epilogs(job, run, names[1:])
    assert core.views.jobs[job]["state"] == "CANCELLED"
