"""A small builder of ledger facts (as decoded dicts) for projection tests, no Kafka involved.

Each call appends one fact with the next ``shard_seq`` of its shard, at the builder's clock,
which only moves forward when told (``at`` or ``advance``).

Facts carry what the core decides (release v2: ``JobQueued``'s resolved partition, account,
time limit, requeue policy; ``JobStarted``'s allocation; ``JobEnded``'s outcome;
``JobRequeued``'s pending reason; ``ConfigApplied``'s default partition and blocks), filled with
the core's own rules (:class:`Decisions`) from the facts written so far, unless a call gives
them. ``LedgerBuilder(legacy=True)`` writes release v1 facts, without them.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from scheduler.config.cluster import DEFAULT_CONFIG, ClusterConfig, parse_config
from scheduler.jobs.admission import resolve
from scheduler.records import from_record
from scheduler.requeue.rules import end_requeue_reason, requeue_policy
from scheduler.scheduling.placement import blocks_of, parse_topology
from scheduler.topology.hostlist import compress
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


class Decisions:
    """The decision fields of each fact, as the core would fill them (per shard config)."""

    def __init__(self) -> None:
        self.configs: dict[str, ClusterConfig] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}

    def fill(self, name: str, shard: str, fields: dict[str, Any]) -> dict[str, Any]:
        handler = getattr(self, "_" + re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower(), None)
        extra = handler(shard, fields) if handler is not None else {}
        return {**extra, **fields}

    def _config(self, shard: str) -> ClusterConfig:
        return self.configs.get(shard, DEFAULT_CONFIG)

    def _config_applied(self, shard: str, f: dict[str, Any]) -> dict[str, Any]:
        if f.get("kind") == "cluster":
            config = self.configs[shard] = parse_config(f["text"])
            default = config.partition("")
            parts = config.partitions  # the partition fields, as the core announces them
            return {"default_partition": default.name if default else "", "blocks": {},
                    "partition_names": [p.name for p in parts],
                    "partition_states": [p.state for p in parts],
                    "partition_max_times": [p.max_time_s for p in parts],
                    "partition_nodes": ["" if p.nodes is None else compress(p.nodes)
                                        for p in parts],
                    "partition_default_times": [p.default_time_s for p in parts],
                    "partition_max_nodes": [p.max_nodes for p in parts],
                    "partition_allow_qos": [",".join(p.allow_qos) for p in parts],
                    "partition_priority_tiers": [p.priority_tier for p in parts],
                    "partition_job_factors": [p.priority_job_factor for p in parts]}
        blocks = blocks_of(parse_topology(f["text"])) if f.get("kind") == "topology" else {}
        return {"default_partition": "", "blocks": blocks}

    def _node_registered(self, shard: str, f: dict[str, Any]) -> dict[str, Any]:
        self.nodes[f["name"]] = {**f, "state": "UNKNOWN"}
        return {}

    def _node_state_changed(self, shard: str, f: dict[str, Any]) -> dict[str, Any]:
        self.nodes.setdefault(f["name"], {})["state"] = f["state"]
        return {}

    def _job_queued(self, shard: str, f: dict[str, Any]) -> dict[str, Any]:
        spec, config = from_record("JobSpec", f["spec"]), self._config(shard)
        resolved = resolve(spec, config)
        job = self.jobs.setdefault(f["job_sluid"], {"run": "", "kill": "", "state": "PENDING"})
        job.update(policy=requeue_policy(spec, config), demand=resolved.demand)
        return {"partition": resolved.partition, "qos": resolved.qos,
                "account": resolved.account, "time_limit_s": resolved.time_limit_s,
                "requeue": job["policy"], "cpus_per_node": resolved.demand.cpus}

    def _job_started(self, shard: str, f: dict[str, Any]) -> dict[str, Any]:
        job = self.jobs.get(f["job_sluid"])
        if job is None:
            return {}
        job.update(run=f["run_sluid"], kill="", state="RUNNING", nodes=list(f["nodes"]))
        demand = job["demand"]
        alloc = []
        for name in f["nodes"]:
            node = self.nodes.get(name, {})
            whole = (node.get("cpus", 0), node.get("mem_mb", 0), node.get("gpus", 0))
            alloc.append(whole if demand.exclusive and node else
                         (demand.cpus, demand.mem_mb, demand.gpus))
        return {"alloc_cpus": [a[0] for a in alloc], "alloc_mem_mb": [a[1] for a in alloc],
                "alloc_gpus": [a[2] for a in alloc]}

    def _run_kill_requested(self, shard: str, f: dict[str, Any]) -> dict[str, Any]:
        job = self.jobs.get(f["job_sluid"])
        if job is not None and job["state"] == "RUNNING" and job["run"] == f["run_sluid"]:
            job["kill"] = f["reason"]
        return {}

    def _job_ended(self, shard: str, f: dict[str, Any]) -> dict[str, Any]:
        job = self.jobs.get(f["job_sluid"])
        final = {"job_state": f["state"], "requeue_reason": "", "held_nodes": [],
                 "defer_release": False}
        if job is None or job["state"] != "RUNNING" or f["run_sluid"] != job["run"]:
            if job is not None:
                job["state"] = f["state"]
            return final
        # type]
        reason = end_requeue_reason(SimpleNamespace(requeue=job["policy"]),  # type: ignore[arg
                                    job["kill"], f["state"], f.get("exit_code", 0),
                                    self._config(shard).requeue)
        if not reason:
            job["state"] = f["state"]
            return final
        job["state"] = "COMPLETING"
        held = [n for n in job["nodes"] if self.nodes.get(n, {}).get("state") != "DOWN"]
        defer = job["policy"] == "expedite" and reason in ("NODE_FAIL", "EXIT_NONZERO")
        return {"job_state": "COMPLETING", "requeue_reason": reason, "held_nodes": held,
                "defer_release": defer}

    def _job_requeued(self, shard: str, f: dict[str, Any]) -> dict[str, Any]:
        job = self.jobs.get(f["job_sluid"])
        if job is not None:
            job.update(state="PENDING", run="", kill="")
        reason = ("JobHeldUser" if f.get("held") else "BeginTime"
                  if f.get("begin_time_ms", 0) > f.get("time_ms", 0) else "None")
        return {"pending_reason": reason}


class LedgerBuilder:
    """Facts of one or more shards, in decision order."""

    def __init__(self, shard: str = "c1", start_ms: int = 1_767_225_600_000,
                 legacy: bool = False) -> None:
        self.shard = shard
        self.now_ms = start_ms
        self.facts: list[Fact] = []
        self.seq: dict[str, int] = {}
        self.clock = SluidClock(7)
        self.job_ids: dict[str, int] = {}
        self.submitted: dict[str, int] = {}
        self.node_sluids: dict[str, str] = {}
        self.specs: dict[str, dict[str, Any]] = {}
        self.decisions = None if legacy else Decisions()

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
        if self.decisions is not None:
            record = self.decisions.fill(fact_name, shard, record)
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
                submit_ms: int | None = None, restart_count: int = 0, **decided: Any) -> str:
        run = self.sluid()
        self.fact("JobStarted", job_sluid=job, job_id=self.job_ids[job], run_sluid=run,
                  restart_count=restart_count, nodes=nodes,
                  node_sluids=[self.node_sluids.get(n, "") for n in nodes], segments=[],
                  partition=partition, user=user, time_limit_s=0,
                  submit_ms=self.submitted[job] if submit_ms is None else submit_ms, **decided)
        return run

    def kill(self, job: str, run: str, reason: str, nodes: list[str]) -> None:
        self.fact("RunKillRequested", job_sluid=job, run_sluid=run, reason=reason, nodes=nodes)

    def ended(self, job: str, run: str, state: str = "COMPLETED", exit_code: int = 0,
              reason: str = "", **decided: Any) -> None:
        self.fact("JobEnded", job_sluid=job, job_id=self.job_ids.get(job, 0), run_sluid=run,
                  state=state, exit_code=exit_code, signal=0, reason=reason, **decided)

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
