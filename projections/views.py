"""The queue, node and history views: a fold of ledger facts into JSON-ready rows.

Pure: ``Views.apply(name, record)`` changes the rows from one fact and returns the keys it
touched; the service persists those rows. Facts are applied once per ``(shard, shard_seq)`` and
in that order: a fact at or below a shard's last applied sequence is ignored, so a replayed
ledger or a re-delivered batch changes nothing, and a fact that arrives ahead of its shard's
next sequence (the ledger's partitions interleave) is held until the gap is filled. Held facts
live in memory; ``projections.extras`` persists them before the service persists the positions
past them.

Rows:

- job (key ``job_sluid``): id, name, user, account, partition, state (Slurm's base state),
  reason (pending reason or end reason), priority, submit/start/end times, nodes, time limit,
  and ``runs``: every run with its SLUID, start, end, state, exit code, signal and nodes;
- node (key ``name``): SLUID, state, reason, CPUs, memory, GPUs, partitions, ``block`` (from a
  ``block=<name>`` feature or the block topology in force) and the runs it holds. ``service``
  is the state the ledger announced (``NodeStateChanged``: IDLE = in service, DRAIN, DOWN,
  INVALID_REG); ``state`` is what sinfo would show: the service state, or for a node in service
  IDLE, MIXED or ALLOCATED from the CPUs its runs hold (as slurmctld derives it).

A job queued without a partition is shown in the default partition of the configuration in force
(``ConfigApplied`` of kind ``cluster``; ``main`` until one is applied), as squeue does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from projections.stats import job_alloc

__all__ = ["ACTIVE_STATES", "Touched", "Views"]

ACTIVE_STATES = frozenset({"PENDING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED"})
Row = dict[str, Any]


@dataclass
class Touched:
    """The rows one fact changed."""

    jobs: set[str] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)


@dataclass
class Views:
    """All rows, and how far each shard has been applied."""

    jobs: dict[str, Row] = field(default_factory=dict)
    nodes: dict[str, Row] = field(default_factory=dict)
    shard_seq: dict[str, int] = field(default_factory=dict)
    job_ids: dict[int, str] = field(default_factory=dict)
    configs: dict[str, Row] = field(default_factory=dict)
    last_fact_ms: int = 0
    default_partition: str = "main"
    job_requeue: bool = True
    """The cluster's ``JobRequeue``: the requeue policy of a job that does not choose one."""
    blocks: dict[str, str] = field(default_factory=dict)
    """Node name → base block of the block topology in force (from ``ConfigApplied``)."""

    held: dict[str, dict[int, tuple[str, Row]]] = field(default_factory=dict)
    """Facts that arrived ahead of their shard's next ``shard_seq``, by shard and sequence."""
    applied: list[tuple[str, Row]] = field(default_factory=list)
    """The facts the last :meth:`apply` folded, in shard order (with the held ones it released)."""

    def apply(self, name: str, record: dict[str, Any]) -> Touched | None:
        """Fold one fact in ``(shard, shard_seq)`` order.

        The ledger's partitions interleave, so a fact can arrive before an earlier fact of its
        shard: it is held until the gap is filled, then folded together with every held
        successor. Returns the rows changed (empty when the fact was only held), or None for a
        fact already applied or held, or a record that is not a fact. ``applied`` lists the
        facts this call folded.
        """
        self.applied = []
        shard, seq = record.get("shard"), record.get("shard_seq")
        if shard is None or seq is None:
            return None
        last = self.shard_seq.get(shard, 0)
        waiting = self.held.get(shard, {})
        if seq <= last or seq in waiting:
            return None
        touched = Touched()
        if seq > last + 1:
            self.held.setdefault(shard, {})[seq] = (name, record)
            return touched
        self._fold(name, record, touched)
        while seq + 1 in waiting:
            seq += 1
            self._fold(*waiting.pop(seq), touched)
        if shard in self.held and not waiting:
            del self.held[shard]
        return touched

    def _fold(self, name: str, record: Row, touched: Touched) -> None:
        self.shard_seq[record["shard"]] = record["shard_seq"]
        self.last_fact_ms = max(self.last_fact_ms, int(record.get("time_ms", 0)))
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, record, touched)
        self.applied.append((name, record))

    def job(self, ref: str) -> Row | None:
        """A job by SLUID or by numeric id."""
        if ref.isdigit():
            sluid = self.job_ids.get(int(ref))
            return None if sluid is None else self.jobs.get(sluid)
        return self.jobs.get(ref)


def _job_queued(v: Views, r: Row, t: Touched) -> None:
    spec = r["spec"]
    v.jobs[r["job_sluid"]] = {
        "job_id": r["job_id"], "job_sluid": r["job_sluid"], "name": spec.get("name", ""),
        "user": spec.get("user", ""), "account": spec.get("account", ""),
        "partition": spec.get("partition", "") or v.default_partition, "qos": spec.get("qos", ""),
        "state": "PENDING", "reason": "None", "priority": 0, "flags": [],
        "submit_ms": r["time_ms"], "start_ms": 0, "end_ms": 0,
        "nodes_min": spec.get("nodes_min", 1), "gpus_per_node": spec.get("gpus_per_node", 0),
        "cpus_per_task": spec.get("cpus_per_task", 1), "ntasks": spec.get("ntasks", 1),
        "time_limit_s": spec.get("time_limit_s", 0), "nodes": [], "run_sluid": "",
        "exit_code": 0, "signal": 0, "workdir": spec.get("workdir", ""),
        "command": spec.get("command", []), "runs": [],
        "array_job_sluid": r.get("array_job_sluid", ""),
        "array_task_id": r.get("array_task_id", -1),
        "nodes_max": spec.get("nodes_max", 0), "mem_per_node_mb": spec.get("mem_per_node_mb", 0),
        "exclusive": spec.get("exclusive", False), "gpu_type": spec.get("gpu_type", ""),
        "restart_count": 0,
        "requeue": spec.get("requeue") or ("yes" if v.job_requeue else "no"),
    }
    v.job_ids[r["job_id"]] = r["job_sluid"]
    t.jobs.add(r["job_sluid"])


def _job_rejected(v: Views, r: Row, t: Touched) -> None:
    v.jobs[r["job_sluid"]] = {
        "job_id": 0, "job_sluid": r["job_sluid"], "name": "", "user": "", "account": "",
        "partition": "", "qos": "", "state": "REJECTED", "reason": r["reason"],
        "detail": r.get("detail", ""), "priority": 0, "flags": [], "submit_ms": r["time_ms"],
        "start_ms": 0, "end_ms": r["time_ms"], "nodes": [], "run_sluid": "", "runs": [],
        "exit_code": 0, "signal": 0,
    }
    t.jobs.add(r["job_sluid"])


def _with_job(
    fn: Callable[[Views, Row, Row, Touched], None],
) -> Callable[[Views, Row, Touched], None]:
    def handler(v: Views, r: Row, t: Touched) -> None:
        job = v.jobs.get(r["job_sluid"])
        if job is not None:
            fn(v, job, r, t)
            t.jobs.add(r["job_sluid"])
    return handler


@_with_job
def _job_pending(v: Views, job: Row, r: Row, t: Touched) -> None:
    job["reason"], job["priority"] = r["reason"], r.get("priority", job["priority"])


@_with_job
def _job_started(v: Views, job: Row, r: Row, t: Touched) -> None:
    job.update(state="RUNNING", reason="None", start_ms=r["time_ms"], nodes=list(r["nodes"]),
               run_sluid=r["run_sluid"], segments=r.get("segments", []),
               restart_count=r.get("restart_count", 0))
    if r.get("partition"):
        job["partition"] = r["partition"]
    job["flags"] = [f for f in job["flags"] if f != "EXPEDITING"]
    job["runs"].append({
        "run_sluid": r["run_sluid"], "restart_count": r.get("restart_count", 0),
        "start_ms": r["time_ms"], "end_ms": 0, "state": "RUNNING", "exit_code": 0,
        "signal": 0, "nodes": list(r["nodes"]),
    })
    for node in r["nodes"]:
        row = v.nodes.get(node)
        if row is not None:
            row["runs"] = [*row["runs"], r["run_sluid"]]
            row["jobs"] = [*row["jobs"], job["job_id"]]
            _show_state(v, row)
            t.nodes.add(node)


@_with_job
def _run_kill_requested(v: Views, job: Row, r: Row, t: Touched) -> None:
    if job["state"] == "RUNNING":
        job["flags"] = sorted({*job["flags"], "COMPLETING"})
        job["kill_reason"] = r["reason"]


@_with_job
def _job_ended(v: Views, job: Row, r: Row, t: Touched) -> None:
    job.update(state=r["state"], reason=r.get("reason") or "None", end_ms=r["time_ms"],
               exit_code=r.get("exit_code", 0), signal=r.get("signal", 0))
    job["flags"] = [f for f in job["flags"] if f != "COMPLETING"]
    for run in job["runs"]:
        if run["run_sluid"] == r.get("run_sluid") and run["end_ms"] == 0:
            run.update(end_ms=r["time_ms"], state=r["state"], exit_code=r.get("exit_code", 0),
                       signal=r.get("signal", 0))
            for node in run["nodes"]:
                row = v.nodes.get(node)
                if row is not None:
                    row["runs"] = [x for x in row["runs"] if x != run["run_sluid"]]
                    row["jobs"] = [x for x in row["jobs"] if x != job["job_id"]]
                    _show_state(v, row)
                    t.nodes.add(node)


@_with_job
def _job_held(v: Views, job: Row, r: Row, t: Touched) -> None:
    job["reason"] = "JobHeldAdmin" if r.get("admin") else "JobHeldUser"
    job["priority"] = 0


@_with_job
def _job_released(v: Views, job: Row, r: Row, t: Touched) -> None:
    job["reason"] = "None"


@_with_job
def _job_expediting(v: Views, job: Row, r: Row, t: Touched) -> None:
    job["flags"] = sorted({*job["flags"], "EXPEDITING"})


@_with_job
def _job_requeued(v: Views, job: Row, r: Row, t: Touched) -> None:
    reason = ("JobHeldUser" if r["held"] else
              "BeginTime" if r["begin_time_ms"] > r["time_ms"] else "None")
    job.update(state="PENDING", reason=reason, nodes=[], run_sluid="", end_ms=0,
               restart_count=r["restart_count"], requeue_reason=r["reason"])
    if r["held"]:
        job["priority"] = 0
    keep = {"EXPEDITING"} if r["expedite"] else set()
    job["flags"] = sorted(f for f in job["flags"] if f in keep)


def _node_registered(v: Views, r: Row, t: Touched) -> None:
    row = v.nodes.get(r["name"], {"state": "UNKNOWN", "service": "UNKNOWN", "reason": "",
                                  "runs": [], "jobs": []})
    row.update(name=r["name"], node_sluid=r["node_sluid"], cpus=r["cpus"], mem_mb=r["mem_mb"],
               gpus=r.get("gpus", 0), gpu_type=r.get("gpu_type", ""),
               features=list(r.get("features", [])), partitions=list(r.get("partitions", [])),
               registered_ms=r["time_ms"])
    row["block"] = _block_of(row["features"]) or v.blocks.get(r["name"], "")
    v.nodes[r["name"]] = row
    t.nodes.add(r["name"])


def _node_state_changed(v: Views, r: Row, t: Touched) -> None:
    row = v.nodes.get(r["name"])
    if row is not None:
        service = "IDLE" if r["state"] in IN_SERVICE else r["state"]  # older ledgers: MIXED…
        row.update(service=service, reason=r.get("reason", ""), state_ms=r["time_ms"])
        _show_state(v, row)
        t.nodes.add(r["name"])


IN_SERVICE = frozenset({"IDLE", "MIXED", "ALLOCATED"})


def _show_state(v: Views, row: Row) -> None:
    """The node's shown state: its service state, or IDLE/MIXED/ALLOCATED when in service."""
    service = row.get("service", row.get("state", "UNKNOWN"))
    if service not in IN_SERVICE:
        row["state"] = service
        return
    cpus = int(row.get("cpus", 0))
    holders = [v.jobs.get(v.job_ids.get(j, "")) for j in row.get("jobs", [])]
    used = sum(job_alloc(job, row).cpus for job in holders if job is not None)
    row["state"] = "IDLE" if not row.get("jobs") else "ALLOCATED" if used >= cpus else "MIXED"


def _block_of(features: list[str]) -> str:
    for feature in features:
        key, sep, value = feature.partition("=")
        if sep and key == "block":
            return value
    return ""


def _config_applied(v: Views, r: Row, t: Touched) -> None:
    from projections.config_view import (  # noqa: PLC0415
        blocks_of,
        default_partition_of,
        job_requeue_of,
    )

    v.configs[r["kind"]] = {"kind": r["kind"], "config_sluid": r["config_sluid"],
                            "digest": r["digest"], "applied_ms": r["time_ms"]}
    if r.get("kind") == "cluster":
        v.default_partition = default_partition_of(r.get("text", ""), v.default_partition)
        v.job_requeue = job_requeue_of(r.get("text", ""), v.job_requeue)
    elif r.get("kind") == "topology":
        v.blocks = blocks_of(r.get("text", ""))
        for name, row in v.nodes.items():
            block = _block_of(row.get("features", [])) or v.blocks.get(name, "")
            if row.get("block") != block:
                row["block"] = block
                t.nodes.add(name)


_HANDLERS: dict[str, Callable[[Views, Row, Touched], None]] = {
    "JobExpediting": _job_expediting,
    "JobRequeued": _job_requeued,
    "JobQueued": _job_queued,
    "JobRejected": _job_rejected,
    "JobPending": _job_pending,
    "JobStarted": _job_started,
    "RunKillRequested": _run_kill_requested,
    "JobEnded": _job_ended,
    "JobHeld": _job_held,
    "JobReleased": _job_released,
    "NodeRegistered": _node_registered,
    "NodeStateChanged": _node_state_changed,
    "ConfigApplied": _config_applied,
}
