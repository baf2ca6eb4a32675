"""A small builder of ledger facts (as decoded dicts) for projection tests, no Kafka involved.

Each call appends one fact with the next ``shard_seq`` of its shard, at the builder's clock,
which only moves forward when told (``at`` or ``advance``).
"""

from __future__ import annotations

from typing import Any

from schemas import SluidClock, format_sluid, mint

Fact = tuple[str, dict[str, Any]]

SPEC_DEFAULTS: dict[str, Any] = {
    "name": "", "user": "alice", "account": "", "partition": "", "qos": "", "nodes_min": 1,
    "nodes_max": 0, "ntasks": 1, "cpus_per_task": 1, "gpus_per_node": 0, "gpu_type": "",
    "mem_per_node_mb": 0, "time_limit_s": 0, "exclusive": False, "command": ["true"],
    "workdir": "", "env": {}, "output": "", "error": "", "requeue": "", "begin_time_ms": 0,
    "dependency": "", "nice": 0, "hold": False, "array": "", "licenses": "", "resources": "",
    "segment": 0, "spread_segments": False, "consolidate_segments": False,
    "exclusive_topo": False, "switches": 0, "switches_max_wait_s": 0, "hot_swap": "",
    "comment": "",
}


class LedgerBuilder:
    """Facts of one or more shards, in decision order."""

    def __init__(self, shard: str = "c1", start_ms: int = 1_767_225_600_000) -> None:
        self.shard = shard
        self.now_ms = start_ms
        self.facts: list[Fact] = []
        self.seq: dict[str, int] = {}
        self.clock = SluidClock(7)
        self.job_ids: dict[str, int] = {}
        self.submitted: dict[str, int] = {}
        self.node_sluids: dict[str, str] = {}
        self.specs: dict[str, dict[str, Any]] = {}

    def sluid(self) -> str:
        number, self.clock = mint(self.clock, self.now_ms)
        return format_sluid(number)

    def advance(self, ms: int) -> LedgerBuilder:
        self.now_ms += ms
        return self

    def fact(self, fact_name: str, /, shard: str | None = None, **fields: Any) -> dict[str, Any]:
        shard = shard or self.shard
        self.seq[shard] = self.seq.get(shard, 0) + 1
        record = {"event_sluid": self.sluid(), "shard": shard, "shard_seq": self.seq[shard],
                  "time_ms": self.now_ms, **fields}
        self.facts.append((fact_name, record))
        return record

    def node(self, name: str, cpus: int = 8, mem_mb: int = 16384, gpus: int = 0,
             partitions: tuple[str, ...] = ("main",), features: tuple[str, ...] = ()) -> str:
        sluid = self.sluid()
        self.node_sluids[name] = sluid
        self.fact("NodeRegistered", node_sluid=sluid, name=name, cpus=cpus, mem_mb=mem_mb,
                  gpus=gpus, gpu_type="h100" if gpus else "", features=list(features),
                  partitions=list(partitions))
        self.fact("NodeStateChanged", node_sluid=sluid, name=name, state="IDLE", reason="")
        return sluid

    def node_state(self, name: str, state: str, reason: str = "") -> None:
        self.fact("NodeStateChanged", node_sluid=self.node_sluids[name], name=name, state=state,
                  reason=reason)

    def queued(self, **spec: Any) -> str:
        job = self.sluid()
        job_id = len(self.job_ids) + 1
        self.job_ids[job] = job_id
        self.submitted[job] = self.now_ms
        self.specs[job] = {**SPEC_DEFAULTS, **spec}
        self.fact("JobQueued", job_sluid=job, job_id=job_id, spec=self.specs[job],
                  array_job_sluid="", array_task_id=-1)
        return job

    def updated(self, job: str, **changes: Any) -> None:
        """A pending job's update: ``JobQueued`` again, same SLUID and id, the new spec."""
        self.specs[job] = {**self.specs[job], **changes}
        self.fact("JobQueued", job_sluid=job, job_id=self.job_ids[job], spec=self.specs[job],
                  array_job_sluid="", array_task_id=-1)

    def pending(self, job: str, reason: str, priority: int = 100) -> None:
        self.fact("JobPending", job_sluid=job, reason=reason, priority=priority)

    def started(self, job: str, nodes: list[str], partition: str = "main", user: str = "alice",
                submit_ms: int | None = None, restart_count: int = 0) -> str:
        run = self.sluid()
        self.fact("JobStarted", job_sluid=job, job_id=self.job_ids[job], run_sluid=run,
                  restart_count=restart_count, nodes=nodes,
                  node_sluids=[self.node_sluids.get(n, "") for n in nodes], segments=[],
                  partition=partition, user=user, time_limit_s=0,
                  submit_ms=self.submitted[job] if submit_ms is None else submit_ms)
        return run

    def kill(self, job: str, run: str, reason: str, nodes: list[str]) -> None:
        self.fact("RunKillRequested", job_sluid=job, run_sluid=run, reason=reason, nodes=nodes)

    def ended(self, job: str, run: str, state: str = "COMPLETED", exit_code: int = 0,
              reason: str = "") -> None:
        self.fact("JobEnded", job_sluid=job, job_id=self.job_ids.get(job, 0), run_sluid=run,
                  state=state, exit_code=exit_code, signal=0, reason=reason)

    def expediting(self, job: str, run: str, trigger: str = "NODE_FAIL") -> None:
        self.fact("JobExpediting", job_sluid=job, run_sluid=run, trigger=trigger)

    def requeued(self, job: str, run: str, reason: str = "NODE_FAIL", expedite: bool = False,
                 held: bool = False, restart_count: int = 1, begin_time_ms: int = 0) -> None:
        self.fact("JobRequeued", job_sluid=job, job_id=self.job_ids[job], run_sluid=run,
                  reason=reason, expedite=expedite, held=held, begin_time_ms=begin_time_ms,
                  restart_count=restart_count)

    def held(self, job: str, admin: bool = False) -> None:
        self.fact("JobHeld", job_sluid=job, admin=admin)

    def released(self, job: str) -> None:
        self.fact("JobReleased", job_sluid=job)

    def epilog(self, job: str, run: str, node: str, ok: bool = True, detail: str = "") -> None:
        self.fact("NodeEpilogCompleted", node_sluid=self.node_sluids.get(node, ""), name=node,
                  job_sluid=job, run_sluid=run, ok=ok, detail=detail)

    def cycle(self, inbox_from: int, inbox_to: int, pending: int = 0, running: int = 0,
              started: int = 0) -> None:
        self.fact("CycleCompleted", inbox_partition=0, inbox_from=inbox_from, inbox_to=inbox_to,
                  pending=pending, running=running, started=started)

    def config(self, kind: str, text: str) -> None:
        self.fact("ConfigApplied", config_sluid=self.sluid(), kind=kind, digest="0" * 64,
                  text=text)
