"""Node failures and requeue in the simulator: the simulated daemons' side, and the metrics.

Requeue modes (``sluice simulate --requeue``):

- ``none``: ``JobRequeue=0`` and every job ``--no-requeue``: a job hit by a failure is lost;
- ``normal``: Slurm's default (``JobRequeue=1``): requeued after the surviving nodes' epilogs,
  eligible ``requeue_delay`` (120 s) + 1 s later, at the back of the queue (new submit time);
- ``expedite``: ``enable_expedited_requeue`` and every job ``--requeue=expedite``: eligible at
  once and ahead of every other job;
- ``hotswap``: ``expedite`` plus Sluice's ``HotSwap: yes`` (``HotSwapWait`` 60 s unless given).

The simulated daemons: a failed node answers nothing until it registers again after its outage
(``RegisterNode``, same node SLUID: back to service as after ``Not responding``); every other
node of a run the core keeps COMPLETING reports its epilog (``ok``) ``epilog_s`` after the run
ended. Jobs restart from the beginning (no checkpoint): a killed run's work is lost.

Metrics (in the ``--json`` output):

- ``goodput`` = useful node-hours / allocated node-hours. Useful: the runs that completed
  (width x run time). Allocated: every run, completed or killed (width x its duration), plus the
  node-hours nodes stayed COMPLETING for a requeue, plus the node-hours of kept nodes a hot-swap
  job protected while it waited for replacements;
- ``mttr_s`` (mean time to recovery): over the runs a failure killed whose job started again,
  from the failure to the next run's start (also p50 and p95); ``unrecovered``: killed runs whose
  job never ran again (lost, held by ``MaxBatchRequeue``, or the trace ended);
- ``restarts_same_groups``: restarts whose segments lie in the same blocks/switches as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler import (
    JobEnded,
    JobRequeued,
    JobStarted,
    NodeFailed,
    RegisterNode,
    ReportEpilog,
    ShardState,
)
from scheduler.config.model import RequeueConfig
from scheduler.records import Fact
from sim.failures import FailureEvent

__all__ = ["MODES", "RecoveryStats", "SimNodes", "requeue_config", "spec_requeue"]

MODES = ("none", "normal", "expedite", "hotswap")
_SPEC = {"none": "no", "normal": "yes", "expedite": "expedite", "hotswap": "expedite"}


def requeue_config(mode: str, hot_swap_wait_s: int = 60) -> RequeueConfig:
    """The cluster's requeue settings for a mode ("" = the defaults)."""
    if mode == "none":
        return RequeueConfig(job_requeue=False)
    if mode in ("expedite", "hotswap"):
        return RequeueConfig(
            expedited_requeue=True, hot_swap=mode == "hotswap", hot_swap_wait_s=hot_swap_wait_s
        )
    return RequeueConfig()


def spec_requeue(mode: str) -> str:
    """What every job asks for (``JobSpec.requeue``)."""
    return _SPEC.get(mode, "")


@dataclass
class SimNodes:
    """The simulated daemons' answers to failures and epilogs."""

    sluids: dict[str, str]  # node name → node SLUID
    names: list[str]  # in natural order (failure ``node`` indexes it)
    cpus: dict[str, tuple[int, int, int, str]]
    epilog_s: int = 5
    down: set[str] = field(default_factory=set)

    def fail(self, event: FailureEvent, now_ms: int) -> tuple[NodeFailed | None, int]:
        """The NodeFailed for ``event`` and when the node returns (None: it is down already)."""
        name = self.names[event.node]
        if name in self.down:
            return None, 0
        self.down.add(name)
        failed = NodeFailed(
            node_sluid=self.sluids[name], name=name, reason="LANL failure", time_ms=now_ms
        )
        return failed, now_ms + event.down_s * 1000

    def back(self, name: str) -> RegisterNode:
        """The node registers again after its outage."""
        self.down.discard(name)
        cpus, mem, gpus, gpu_type = self.cpus[name]
        return RegisterNode(
            node_sluid=self.sluids[name],
            name=name,
            cpus=cpus,
            mem_mb=mem,
            gpus=gpus,
            gpu_type=gpu_type,
        )

    def epilogs(self, state: ShardState, fact: JobEnded) -> list[ReportEpilog]:
        """The epilogs a COMPLETING job waits for, from the nodes that are up."""
        job = state.jobs.get(fact.job_sluid)
        if job is None or not job.is_completing:
            return []
        return [
            ReportEpilog(
                job_sluid=job.job_sluid,
                run_sluid=job.run_sluid,
                node_sluid=self.sluids[name],
                node_name=name,
                ok=True,
            )
            for name in job.completing
            if name not in self.down
        ]


@dataclass
class RecoveryStats:
    """Goodput and time to recovery, folded from the facts (see the module)."""

    hot_swap_wait_s: int = 0
    runs: dict[str, tuple[int, int]] = field(default_factory=dict)  # run → (start, width)
    useful: float = 0.0
    allocated: float = 0.0
    lost_work: float = 0.0
    killed: dict[str, int] = field(default_factory=dict)  # job → failure time (awaiting restart)
    holding: dict[str, tuple[int, int]] = field(default_factory=dict)  # job → (since, nodes)
    kept: dict[str, tuple[int, int]] = field(default_factory=dict)  # job → (requeued, kept)
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)  # job → last run's groups
    recoveries: list[int] = field(default_factory=list)
    same_groups: int = 0
    restarts: int = 0
    lost_jobs: set[str] = field(default_factory=set)
    failures: int = 0

    def observe(self, state: ShardState, fact: Fact, now_ms: int) -> None:
        """Fold one fact (``state`` after it was evolved)."""
        if isinstance(fact, JobStarted):
            self._started(fact, now_ms)
        elif isinstance(fact, JobEnded) and fact.run_sluid in self.runs:
            self._ended(state, fact, now_ms)
        elif isinstance(fact, JobRequeued):
            since, nodes = self.holding.pop(fact.job_sluid, (now_ms, 0))
            self.allocated += nodes * (now_ms - since) / 1000
            job = state.jobs[fact.job_sluid]
            if fact.expedite and self.hot_swap_wait_s:
                healthy = [n for n in job.nodes if _up(state, n)]
                self.kept[fact.job_sluid] = (now_ms, len(healthy))

    def _started(self, fact: JobStarted, now_ms: int) -> None:
        self.runs[fact.run_sluid] = (now_ms, len(fact.nodes))
        failed_at = self.killed.pop(fact.job_sluid, None)
        groups = tuple(s.group for s in fact.segments)
        if failed_at is not None:
            self.restarts += 1
            self.recoveries.append(now_ms - failed_at)
            self.same_groups += groups == self.groups.get(fact.job_sluid)
        requeued, kept = self.kept.pop(fact.job_sluid, (now_ms, 0))
        self.allocated += kept * min(now_ms - requeued, self.hot_swap_wait_s * 1000) / 1000
        self.groups[fact.job_sluid] = groups

    def _ended(self, state: ShardState, fact: JobEnded, now_ms: int) -> None:
        start, width = self.runs.pop(fact.run_sluid)
        node_s = width * (now_ms - start) / 1000
        self.allocated += node_s
        job = state.jobs[fact.job_sluid]
        if fact.state != "NODE_FAIL" and job.has_ended:  # it ran to its end (the trace's time)
            self.useful += node_s
            return
        if fact.state == "NODE_FAIL":
            self.failures += 1
            self.lost_work += node_s
            self.killed[fact.job_sluid] = now_ms
            if job.has_ended:
                self.lost_jobs.add(fact.job_sluid)
        if job.is_completing:
            self.holding[fact.job_sluid] = (now_ms, len(job.held))

    def as_json(self) -> dict[str, object]:
        """The metrics (node-hours from the node-seconds folded)."""

        def hours(node_s: float) -> float:
            return node_s / 3600

        waits = sorted(self.recoveries)

        def pct(p: float) -> float | None:
            return (
                round(waits[min(len(waits) - 1, int(p * len(waits)))] / 1000, 1) if waits else None
            )

        return {
            "runs_killed_by_failures": self.failures,
            "restarts": self.restarts,
            "unrecovered": len(self.killed),
            "jobs_lost": len(self.lost_jobs),
            "useful_node_hours": round(hours(self.useful), 1),
            "allocated_node_hours": round(hours(self.allocated), 1),
            "lost_node_hours": round(hours(self.lost_work), 1),
            "goodput": round(self.useful / self.allocated, 6) if self.allocated else None,
            "mttr_s": round(sum(waits) / len(waits) / 1000, 1) if waits else None,
            "mttr_p50_s": pct(0.5),
            "mttr_p95_s": pct(0.95),
            "restarts_same_groups": self.same_groups,
        }


def _up(state: ShardState, name: str) -> bool:
    node = state.nodes.get(state.node_sluid_by_name(name))
    return node is not None and node.state in ("IDLE", "MIXED", "ALLOCATED")
