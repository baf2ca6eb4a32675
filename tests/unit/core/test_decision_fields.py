"""Facts carry what the core decided (release v2), and it is what ``evolve`` makes of them.

Each scenario drives the real core (``decide``/``schedule``/``evolve``) and checks, after every
fact is folded, that its decision fields say what the state now holds: ``JobQueued``'s resolved
partition, QOS, account, time limit, requeue policy and per-node CPUs; ``JobStarted``'s
allocation; ``JobEnded``'s outcome (COMPLETING or the final state, the requeue reason, the nodes
kept, whether they are kept until the requeue); ``JobRequeued``'s pending reason;
``ConfigApplied``'s default partition and blocks.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler import (
    ApplyConfig,
    CancelJob,
    ConfigApplied,
    JobEnded,
    JobQueued,
    JobRequeued,
    JobStarted,
    NodeFailed,
    RegisterNode,
    ReportEpilog,
    ReportJobExit,
    SubmitJob,
    UpdateJob,
    decide,
    evolve,
    initial_state,
    schedule,
)
from scheduler.requeue.rules import defers_release
from tests.unit.core.gwt import CLUSTER, SHARD, T0, node_sluid, sluid, spec

CONFIG = (
    "SlurmctldParameters: enable_expedited_requeue\nRequeueExit: 3\nRequeueExitHold: 4\n"
    "Partitions:\n  - PartitionName: batch\n    Default: YES\n    DefaultTime: 90\n"
    "  - PartitionName: debug\n    MaxTime: 30\n"
)


class Core:
    """One shard; every fact is checked against the state right after it is folded."""

    def __init__(self, config: str = CONFIG, nodes: int = 3, cpus: int = 8) -> None:
        self.state = initial_state(SHARD, CLUSTER)
        self.now, self.jobs, self.seen = T0, 0, []
        self.do(ApplyConfig(config_sluid=sluid(900), kind="cluster", text=config))
        for i in range(1, nodes + 1):
            self.do(RegisterNode(node_sluid=node_sluid(f"n{i}"), name=f"n{i}", cpus=cpus,
                                 mem_mb=64_000, gpus=4, gpu_type="h100"))

    def do(self, request: Any = None) -> list[Any]:
        self.now += 1_000
        facts = (schedule(self.state, self.now) if request is None
                 else decide(self.state, request, self.now))
        for fact in facts:
            before = self.state.jobs.get(getattr(fact, "job_sluid", ""))
            self.state = evolve(self.state, fact)
            self.check(fact, before)
        self.seen += facts
        return facts

    def check(self, fact: Any, before: Any) -> None:
        job = self.state.jobs.get(getattr(fact, "job_sluid", ""))
        if isinstance(fact, JobQueued):
            assert job is not None
            assert (fact.partition, fact.qos, fact.account, fact.time_limit_s, fact.requeue,
                    fact.cpus_per_node) == (job.partition, job.qos, job.account,
                                            job.time_limit_s, job.requeue, job.demand.cpus)
        elif isinstance(fact, JobStarted):
            assert job is not None
            assert list(zip(fact.alloc_cpus, fact.alloc_mem_mb, fact.alloc_gpus,
                            strict=True)) == list(job.alloc)
        elif isinstance(fact, JobEnded) and job is not None:
            assert fact.job_state == job.state
            if job.is_completing:
                assert fact.requeue_reason == job.requeue_reason != ""
                assert fact.held_nodes == job.held
                assert fact.defer_release == defers_release(job)
            else:
                assert (fact.requeue_reason, fact.held_nodes, fact.defer_release) == ("", (),
                                                                                      False)
                assert before is None or fact.job_state == fact.state
        elif isinstance(fact, JobRequeued):
            assert job is not None and fact.pending_reason == job.reason

    def submit(self, **fields: Any) -> str:
        self.jobs += 1
        job = sluid(self.jobs, self.now)
        self.do(SubmitJob(job_sluid=job, spec=spec(**fields)))
        return job

    def exit(self, job: str, code: int) -> None:
        core = self.state.jobs[job]
        self.do(ReportJobExit(job_sluid=job, run_sluid=core.run_sluid,
                              node_sluid=node_sluid(core.nodes[0]), node_name=core.nodes[0],
                              exit_code=code))

    def epilogs(self, job: str, names: tuple[str, ...], ok: bool = True) -> None:
        run = self.state.jobs[job].run_sluid
        for name in names:
            self.do(ReportEpilog(job_sluid=job, run_sluid=run, node_sluid=node_sluid(name),
                                 node_name=name, ok=ok, exit_code=0 if ok else 2))

    def last(self, kind: type) -> Any:
        return next(f for f in reversed(self.seen) if isinstance(f, kind))


def test_job_queued_says_the_resolved_partition_time_limit_account_and_requeue_policy() -> None:
    core = Core()
    core.submit(ntasks=6, nodes_min=2, cpus_per_task=2)
    queued = core.last(JobQueued)
    assert (queued.spec.partition, queued.partition) == ("", "batch")
    assert (queued.spec.time_limit_s, queued.time_limit_s) == (0, 90 * 60)
    assert (queued.spec.requeue, queued.requeue) == ("", "yes")
    assert queued.cpus_per_node == 6  # three tasks per node, two CPUs each
    core.submit(partition="debug", requeue="expedite")
    queued = core.last(JobQueued)
    assert (queued.partition, queued.time_limit_s, queued.requeue) == ("debug", 1800,
                                                                       "expedite")


def test_cluster_job_requeue_zero_is_the_policy_of_a_job_without_a_choice() -> None:
    core = Core("JobRequeue: 0\n")
    core.submit()
    assert core.last(JobQueued).requeue == "no"


def test_an_update_is_queued_again_with_the_new_resolution() -> None:
    core = Core(nodes=0)
    job = core.submit()
    core.do(UpdateJob(job_sluid=job, changes={"partition": "debug"}))
    assert (core.last(JobQueued).partition, core.last(JobQueued).time_limit_s) == ("debug", 1800)


def test_job_started_says_each_nodes_allocation_whole_nodes_when_exclusive() -> None:
    core = Core()
    core.submit(nodes_min=2, ntasks=2, cpus_per_task=3, mem_per_node_mb=1000, gpus_per_node=2)
    core.do()
    started = core.last(JobStarted)
    assert (started.alloc_cpus, started.alloc_mem_mb, started.alloc_gpus) == ((3, 3),
                                                                              (1000, 1000),
                                                                              (2, 2))
    core.submit(exclusive=True)
    core.do()
    started = core.last(JobStarted)
    assert (started.alloc_cpus, started.alloc_mem_mb, started.alloc_gpus) == ((8,), (64_000,),
                                                                              (4,))


@pytest.mark.parametrize(("policy", "state", "reason", "defer"), [
    ("yes", "COMPLETING", "NODE_FAIL", False),
    ("expedite", "COMPLETING", "NODE_FAIL", True),
    ("no", "NODE_FAIL", "", False),
])
def test_a_node_failure_ends_the_run_with_the_requeue_decided(
    policy: str, state: str, reason: str, defer: bool
) -> None:
    core = Core()
    job = core.submit(nodes_min=3, requeue=policy)
    core.do()
    core.do(NodeFailed(node_sluid=node_sluid("n1"), name="n1", reason="", time_ms=0))
    ended = core.last(JobEnded)
    assert (ended.job_state, ended.requeue_reason, ended.defer_release) == (state, reason, defer)
    assert ended.held_nodes == (("n2", "n3") if reason else ())
    if reason:
        core.epilogs(job, ("n2", "n3"))
        assert core.last(JobRequeued).pending_reason == ("None" if defer else "BeginTime")


@pytest.mark.parametrize(("code", "state", "reason", "pending"), [
    (3, "COMPLETING", "REQUEUE_EXIT", "BeginTime"),
    (4, "COMPLETING", "SPECIAL_EXIT", "JobHeldUser"),
    (5, "FAILED", "", ""),
])
def test_an_exit_code_ends_the_run_with_the_requeue_decided(
    code: int, state: str, reason: str, pending: str
) -> None:
    core = Core()
    job = core.submit(nodes_min=2)
    core.do()
    core.exit(job, code)
    ended = core.last(JobEnded)
    assert (ended.job_state, ended.requeue_reason) == (state, reason)
    if pending:
        core.epilogs(job, ("n1", "n2"))
        assert core.last(JobRequeued).pending_reason == pending


def test_a_non_zero_exit_of_an_expedite_job_keeps_every_node_until_the_requeue() -> None:
    core = Core()
    job = core.submit(nodes_min=2, requeue="expedite")
    core.do()
    core.exit(job, 1)
    ended = core.last(JobEnded)
    assert (ended.job_state, ended.requeue_reason, ended.held_nodes, ended.defer_release) == (
        "COMPLETING", "EXIT_NONZERO", ("n1", "n2"), True)
    core.epilogs(job, ("n1", "n2"))
    assert core.last(JobRequeued).pending_reason == "JobHeldUser"  # no epilog failed


def test_a_cancel_ends_a_pending_job_and_a_completing_one_for_good() -> None:
    core = Core(nodes=2)
    pending = core.submit(hold=True)  # pends: held (more nodes than registered is refused)
    core.do(CancelJob(job_sluid=pending))
    assert core.last(JobEnded).job_state == "CANCELLED"
    job = core.submit(nodes_min=2)
    core.do()
    core.exit(job, 3)
    core.do(CancelJob(job_sluid=job))
    ended = core.last(JobEnded)
    assert (ended.run_sluid, ended.job_state, ended.held_nodes) == ("", "CANCELLED", ())


def test_config_applied_says_the_default_partition_and_the_blocks() -> None:
    core = Core()
    assert core.last(ConfigApplied).default_partition == "batch"
    core.do(ApplyConfig(config_sluid=sluid(901), kind="topology",
                        text="BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n3\nBlockSizes=1\n"))
    applied = core.last(ConfigApplied)
    assert (applied.default_partition, dict(applied.blocks)) == (
        "", {"n1": "b1", "n2": "b1", "n3": "b2"})
