"""The simulation loop: trace events on a virtual clock through the real scheduling core.

Events sit in one queue ordered by (time, sequence). All events of one instant form a batch, as
the shard agent's inbox batches do, and each batch is one :func:`scheduler.cycle.run_cycle` —
the function the shard runs: each request is decided and its facts evolved, then one
``schedule`` pass, then the cycle closes by the core's one close rule
(:func:`scheduler.cycle.cycle_closes`). The simulator has no inbox to record, so its cycles
close when the close changes the state (an ended job is due to be purged after MinJobAge, or
fair-share usage to accrue); ``every_cycle`` gives each batch an inbox position, as the shard's
batches have, so every batch with facts closes too (a check: the decisions are the same). The
simulated node daemons answer the commands: a started run reports its exit after its
recorded run time; with ``kill_at_limit`` a run longer than its limit is killed when the core
requests it (the pass at the limit). Without it a run always lasts its recorded time (the core's
TIMEOUT kill is ignored by the simulated node, and backfill then expects the node "soon", as
Slurm does for overdue jobs).

A topology (``SimOptions.topology_text``, ``--topology FILE``) is applied with the same
``ApplyConfig`` the shard sees, so placement goes through the topology plugins.

Node failures (``SimOptions.failures``, from :mod:`sim.failures`) are events too: the node fails
(``NodeFailed``), registers again after its outage, and the core requeues what it ran as the
``requeue`` mode says (:mod:`sim.recovery`); the surviving nodes report their epilogs
``epilog_s`` after the run ended.
"""

from __future__ import annotations

import gc
import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scheduler import (
    ApplyConfig,
    ClusterConfig,
    JobEnded,
    JobRequeued,
    JobSpec,
    JobStarted,
    NodeConfig,
    PartitionConfig,
    PendingReason,
    RegisterNode,
    ReportJobExit,
    RunKillRequested,
    SchedulerConfig,
    ShardState,
    SubmitJob,
    decide,
    evolve,
    initial_state,
)
from scheduler.cycle import CycleResult, InboxRange, Timed, run_cycle
from scheduler.records import Fact, JobRejected
from scheduler.shard.sluids import format_fast
from schemas.sluid import SEQUENCE_MAX, SluidClock
from sim.failures import FailureEvent
from sim.metrics import JobTimes, summarise
from sim.recovery import RecoveryStats, SimNodes, requeue_config, spec_requeue
from sim.workload import TraceJob, Workload

__all__ = ["SimOptions", "SimResult", "Simulation", "simulate"]

SUBMIT, EXIT, WAKE, FAIL, BACK, EPILOG = 0, 1, 2, 3, 4, 5


@dataclass(frozen=True, slots=True)
class SimOptions:
    """How to simulate: the policy, backfill knobs and the run-time rule."""

    policy: str = "easy"
    kill_at_limit: bool = False
    bf_window_s: int = 86_400 * 30
    bf_resolution_s: int = 1
    bf_max_job_test: int = 1_000_000
    max_jobs: int = 0  # 0 = the whole trace
    cluster_id: int = 2
    topology_text: str = ""  # topology.yaml / topology.conf over the machine's node names
    arrival_scale: float = 1.0  # submit times are multiplied by this (< 1 raises the load)
    failures: tuple[FailureEvent, ...] = ()  # node failures (seconds after the trace's start)
    requeue: str = ""  # none | normal | expedite | hotswap (sim.recovery); "" = the defaults
    epilog_s: int = 5  # how long a node's epilog takes after a run ends
    hot_swap_wait_s: int = 60  # HotSwapWait in the hotswap mode
    every_cycle: bool = False  # close a cycle after every batch, as the shard does


@dataclass(slots=True)
class SimResult:
    """The standard metrics of a run, plus how the core behaved."""

    trace: str
    policy: str
    jobs: int
    dropped: int
    dropped_by_reason: dict[str, int]
    rejected: int
    avg_wait_s: float
    avg_bounded_slowdown: float
    utilization: float
    makespan_s: float
    wall_s: float
    jobs_per_s: float
    killed_at_limit: int
    passes: int
    facts: int
    nodes: int
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The fields ``sluice simulate --json`` prints."""
        return {
            "trace": self.trace,
            "policy": self.policy,
            "nodes": self.nodes,
            "jobs": self.jobs,
            "dropped": self.dropped,
            "dropped_by_reason": self.dropped_by_reason,
            "rejected": self.rejected,
            "avg_wait_s": round(self.avg_wait_s, 3),
            "avg_bounded_slowdown": round(self.avg_bounded_slowdown, 4),
            "utilization": round(self.utilization, 6),
            "makespan_s": round(self.makespan_s, 3),
            "wall_s": round(self.wall_s, 3),
            "jobs_per_s": round(self.jobs_per_s, 1),
            "killed_at_limit": self.killed_at_limit,
            "passes": self.passes,
            "facts": self.facts,
            **self.extra,
        }


def cluster_config(workload: Workload, options: SimOptions) -> ClusterConfig:
    """The simulated cluster: the trace's machine in one partition, the chosen policy."""
    nodes = tuple(
        NodeConfig(n.name, n.cpus, n.mem_mb, n.gpus, n.gpu_type) for n in workload.machine
    )
    return ClusterConfig(
        cluster_name="sim",
        nodes=nodes,
        partitions=(PartitionConfig("main", default=True),),
        scheduler=SchedulerConfig(
            policy=options.policy,
            bf_window_s=options.bf_window_s,
            bf_resolution_s=options.bf_resolution_s,
            bf_max_job_test=options.bf_max_job_test,
        ),
        requeue=requeue_config(options.requeue, options.hot_swap_wait_s),
    )


class Simulation:
    """One run of a workload through the core."""

    def __init__(self, workload: Workload, options: SimOptions) -> None:
        self.workload, self.options = workload, options
        self.state: ShardState = initial_state(
            "sim", options.cluster_id, cluster_config(workload, options)
        )
        self.base_ms = workload.start_unix_s * 1000
        SluidClock(options.cluster_id)  # validates the cluster id
        self.clock_ms, self.clock_seq = 0, -1  # the last SLUID minted (schemas.sluid.mint)
        # events as (time, sequence, kind, payload): the trace's (and the failures') in order,
        # then a heap of those the run adds; the next event is the smaller of the two heads
        # (the order of one heap of all events, without sifting through 54,000 submissions)
        self.initial: list[tuple[int, int, int, Any]] = []
        self.queue: list[tuple[int, int, int, Any]] = []
        self.seq = 0
        self.trace_jobs: dict[str, TraceJob] = {}
        self.times: dict[str, JobTimes] = {}
        self.rejected = self.killed = self.passes = self.facts = 0
        self.progress: Callable[[int], None] | None = None  # called per submission and exit
        self._now_ms = 0
        jobs = workload.jobs[: options.max_jobs] if options.max_jobs else workload.jobs
        for job in jobs:
            submit_ms = round(job.submit_s * 1000 * options.arrival_scale)
            self._push_initial(self.base_ms + submit_ms, SUBMIT, job)
        for event in options.failures:
            self._push_initial(self.base_ms + event.at_s * 1000, FAIL, event)
        self.initial.sort()  # by (time, sequence): sequences are unique
        wait_s = options.hot_swap_wait_s
        self.recovery = RecoveryStats(hot_swap_wait_s=wait_s if options.requeue == "hotswap" else 0)
        self.nodes = SimNodes({}, [n.name for n in workload.machine], {}, options.epilog_s)

    def mint(self, now_ms: int) -> str:
        """A new SLUID, as ``schemas.sluid.mint`` would give it (the next sequence in the same
        millisecond; past the last sequence, the next millisecond), formatted fast."""
        if now_ms > self.clock_ms:
            self.clock_ms, self.clock_seq = now_ms, 0
        elif self.clock_seq < SEQUENCE_MAX:
            self.clock_seq += 1
        else:
            self.clock_ms, self.clock_seq = self.clock_ms + 1, 0
        return format_fast((self.options.cluster_id << 52) | (self.clock_ms << 10) | self.clock_seq)

    def push(self, time_ms: int, kind: int, payload: Any) -> None:
        """Queue an event; equal times keep insertion order."""
        self.seq += 1
        heapq.heappush(self.queue, (time_ms, self.seq, kind, payload))

    def _push_initial(self, time_ms: int, kind: int, payload: Any) -> None:
        """An event known before the run starts (sorted once, before the run)."""
        self.seq += 1
        self.initial.append((time_ms, self.seq, kind, payload))

    def _apply(self, facts: list[Fact], now_ms: int) -> None:
        """Fold facts decided outside a cycle (the machine's registration)."""
        self._now_ms = now_ms
        state = self.state
        for fact in facts:
            state = evolve(state, fact)
            self._observe(state, fact)
        self.state = state
        self.facts += len(facts)

    def _observe(self, state: ShardState, fact: Fact) -> None:
        """One fact, with the state right after it: the simulated nodes and users answer."""
        kind, now_ms = type(fact), self._now_ms
        if kind is JobStarted:
            self._started(fact, now_ms)  # type: ignore[arg-type]
        elif kind is JobEnded:
            self._ended(state, fact, now_ms)  # type: ignore[arg-type]
        elif kind is RunKillRequested and self.options.kill_at_limit:
            self._kill(fact, now_ms)  # type: ignore[arg-type]
        elif kind is JobRejected:
            self.rejected += 1
        elif kind is JobRequeued:
            self._requeued(fact, now_ms)  # type: ignore[arg-type]
        if self.options.failures:
            self.recovery.observe(state, fact, now_ms)

    def _ended(self, state: ShardState, fact: JobEnded, now_ms: int) -> None:
        """The job's end (unless its requeue is pending: then the epilogs it waits for)."""
        times = self.times.get(fact.job_sluid)
        job = state.jobs.get(fact.job_sluid)
        if times is not None and job is not None and job.has_ended:
            times.end_ms = now_ms
        for report in self.nodes.epilogs(state, fact):
            self.push(now_ms + self.nodes.epilog_s * 1000, EPILOG, report)

    def _requeued(self, fact: JobRequeued, now_ms: int) -> None:
        """Wake the core when the requeued job becomes eligible, and when a hot swap expires
        (the shard gets a Tick every second; the simulator only wakes when something is due)."""
        if fact.begin_time_ms > now_ms:
            self.push(fact.begin_time_ms, WAKE, None)
        if fact.expedite:
            wait_s = self.state.config.requeue.hot_swap_wait_s
            self.push(now_ms + wait_s * 1000, WAKE, None)

    def _started(self, fact: JobStarted, now_ms: int) -> None:
        job = self.trace_jobs[fact.job_sluid]
        self.times[fact.job_sluid].start_ms = now_ms
        exit_ = (fact.job_sluid, fact.run_sluid, fact.node_sluids[0], fact.nodes[0], 0)
        if self.options.kill_at_limit and job.run_s > job.estimate_s:
            self.push(now_ms + job.estimate_s * 1000, WAKE, None)
        else:
            self.push(now_ms + job.run_s * 1000, EXIT, exit_)

    def _kill(self, fact: RunKillRequested, now_ms: int) -> None:
        job = self.state.jobs.get(fact.job_sluid)
        if job is not None and job.run_sluid == fact.run_sluid:
            self.killed += 1
            self.push(
                now_ms, EXIT, (job.job_sluid, job.run_sluid, job.node_sluids[0], job.nodes[0], 9)
            )

    def _request(self, kind: int, payload: Any, now_ms: int) -> Any:
        if kind == SUBMIT:
            sluid = self.mint(now_ms)
            job: TraceJob = payload
            self.trace_jobs[sluid] = job
            self.times[sluid] = JobTimes(
                submit_ms=now_ms,
                run_s=job.run_s,
                width=job.nodes,
                cpus=job.cpus_per_node,
                gpus=job.gpus,
            )
            return SubmitJob(job_sluid=sluid, spec=_spec(job, spec_requeue(self.options.requeue)))
        if kind == EXIT:
            job_sluid, run_sluid, node_sluid, node_name, signal = payload
            return ReportJobExit(
                job_sluid=job_sluid,
                run_sluid=run_sluid,
                node_sluid=node_sluid,
                node_name=node_name,
                exit_code=0,
                signal=signal,
            )
        if kind == FAIL:
            failed, back_ms = self.nodes.fail(payload, now_ms)
            if failed is not None:
                self.push(back_ms, BACK, failed.name)
            return failed
        if kind == BACK:
            return self.nodes.back(payload)
        if kind == EPILOG:
            return payload
        return None

    def _register_nodes(self) -> None:
        now = self.base_ms
        for node in self.workload.machine:
            request = RegisterNode(
                node_sluid=self.mint(now),
                name=node.name,
                cpus=node.cpus,
                mem_mb=node.mem_mb,
                gpus=node.gpus,
                gpu_type=node.gpu_type,
            )
            self.nodes.sluids[node.name] = request.node_sluid
            self.nodes.cpus[node.name] = (node.cpus, node.mem_mb, node.gpus, node.gpu_type)
            self._apply(decide(self.state, request, now), now)
        if self.options.topology_text:
            apply = ApplyConfig(
                config_sluid=self.mint(now),
                kind="topology",
                text=self.options.topology_text,
                source="topology",
            )
            facts = decide(self.state, apply, now)
            if any(isinstance(f, JobRejected) for f in facts):
                raise ValueError(f"the topology is invalid: {facts[0]}")
            self._apply(facts, now)

    def run(self) -> SimResult:
        """Run to the end of the trace; return the metrics.

        The collector's thresholds are raised for the run (and restored after): the state
        holds many long-lived objects, and full collections would otherwise rescan them often.
        """
        thresholds = gc.get_threshold()
        gc.set_threshold(50_000, 50, 100)
        try:
            return self._run()
        finally:
            gc.set_threshold(*thresholds)

    def _run(self) -> SimResult:
        started = time.perf_counter()
        self._register_nodes()
        queue, batch = self.queue, 0
        initial, first, known = self.initial, 0, len(self.initial)
        every = self.options.every_cycle
        advance = self.progress
        pop = heapq.heappop
        while queue or first < known:
            if first < known and (not queue or initial[first] < queue[0]):
                now = initial[first][0]
            else:
                now = queue[0][0]
            requests: list[Timed] = []
            while True:  # every event at ``now``, in (time, sequence) order
                if first < known and initial[first][0] == now and (
                    not queue or initial[first] < queue[0]
                ):
                    _, _, kind, payload = initial[first]
                    first += 1
                elif queue and queue[0][0] == now:
                    _, _, kind, payload = pop(queue)
                else:
                    break
                if advance is not None and kind in (SUBMIT, EXIT):
                    advance(1)
                request = self._request(kind, payload, now)
                if request is not None:
                    requests.append(Timed(batch, now, request))
            self._now_ms = now
            inbox = InboxRange(0, batch, batch) if every else None
            result: CycleResult[None] = run_cycle(
                self.state, requests, inbox, now, observe=self._observe, commands=False
            )
            self.state = result.state
            self.facts += len(result.facts)
            self.passes += 1
            batch += 1
        wall = time.perf_counter() - started
        return self._result(wall)

    def _recovery_metrics(self) -> dict[str, Any]:
        held = sum(1 for j in self.state.jobs.values() if j.reason == PendingReason.MAX_REQUEUE)
        metrics: dict[str, Any] = {
            "jobs_held_max_requeue": held,
            "requeue": self.options.requeue or "normal",
            "failures_injected": len(self.options.failures),
            "epilog_s": self.options.epilog_s,
        }
        return metrics | self.recovery.as_json()

    def _result(self, wall_s: float) -> SimResult:
        lost = self.recovery.lost_jobs
        done = [
            t
            for sluid, t in self.times.items()
            if t.end_ms >= 0 and t.start_ms >= 0 and sluid not in lost
        ]
        summary = summarise(
            done,
            sum(n.cpus for n in self.workload.machine),
            [n.cpus for n in self.workload.machine],
        )
        gpus = sum(n.gpus for n in self.workload.machine)
        extra = (
            {"gpu_utilization": round(summary.gpu_work / (gpus * summary.makespan_s), 6)}
            if gpus and summary.makespan_s
            else {}
        )
        if self.options.failures:
            extra |= self._recovery_metrics()
        return SimResult(
            trace=self.workload.name,
            policy=self.options.policy,
            jobs=len(done),
            dropped=self.workload.dropped_total,
            dropped_by_reason=dict(self.workload.dropped),
            rejected=self.rejected,
            avg_wait_s=summary.avg_wait_s,
            avg_bounded_slowdown=summary.avg_bounded_slowdown,
            utilization=summary.utilization,
            makespan_s=summary.makespan_s,
            wall_s=wall_s,
            jobs_per_s=len(done) / wall_s if wall_s > 0 else 0.0,
            killed_at_limit=self.killed,
            passes=self.passes,
            facts=self.facts,
            nodes=len(self.workload.machine),
            extra=extra,
        )


def _spec(job: TraceJob, requeue: str = "") -> JobSpec:
    return JobSpec(
        name=f"job{job.number}",
        user=job.user,
        nodes_min=job.nodes,
        ntasks=job.nodes,
        cpus_per_task=job.cpus_per_node,
        gpus_per_node=job.gpus,
        gpu_type=job.gpu_type,
        mem_per_node_mb=job.mem_mb,
        time_limit_s=max(job.estimate_s, 1),
        command=("sim",),
        requeue=requeue,
    )


def simulate(
    workload: Workload,
    options: SimOptions | None = None,
    progress: Callable[[int], None] | None = None,
) -> SimResult:
    """Simulate ``workload`` under ``options`` (EASY by default); ``progress`` is told of each
    job's submission and each run's end (two steps a job, for a progress bar)."""
    simulation = Simulation(workload, options or SimOptions())
    simulation.progress = progress
    return simulation.run()
