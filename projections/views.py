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
  ``flags`` (Slurm's state flags: COMPLETING, EXPEDITING, SPECIAL_EXIT), reason (pending reason
  or end reason), priority, submit/start/end times, nodes, time limit, requeue policy and
  ``requeue_reason`` (of the pending or last requeue), and ``runs``: every run with its SLUID,
  start, end, state, exit code, signal, nodes and ``requeue_reason`` (the requeue its end led
  to, "" if none). :func:`projections.job_states.shown_state` gives what squeue shows;
- node (key ``name``): SLUID, state, reason, CPUs, memory, GPUs, partitions, ``block`` (from a
  ``block=<name>`` feature or the block topology in force) and the runs it holds. ``service``
  is the state the ledger announced (``NodeStateChanged``: IDLE = in service, DRAIN, DOWN,
  INVALID_REG); ``state`` is what sinfo would show: the service state, or for a node in service
  IDLE, MIXED or ALLOCATED from the CPUs its runs hold (as slurmctld derives it).

A job queued without a partition is shown in the default partition of the configuration in force
(``ConfigApplied`` of kind ``cluster``; ``main`` until one is applied), as squeue does.

Requeues, as slurmctld shows them. A ``JobEnded`` whose run the core will requeue (the core's
rule, :mod:`projections.requeue_rules`, applied to the facts before it) leaves the job
**PENDING + COMPLETING** while the run's epilogs run, as Slurm's requeue does
(``_set_requeued_job_pending_completing``): squeue shows ``CG``, the job counts as pending and
completing, never as finished, and it keeps the run's nodes that are not DOWN until their
``NodeEpilogCompleted`` (all of them until ``JobRequeued`` for an expedite-flag job that lost a
node or exited non-zero), as the core does. ``JobRequeued`` makes it PENDING again (with
EXPEDITING when expedited); requeued by ``RequeueExitHold`` (reason ``SPECIAL_EXIT``) it is
PENDING + SPECIAL_EXIT with reason ``JobHeldUser`` until ``JobReleased``. An awaited epilog
(``NodeEpilogCompleted(ok)``) of a run the views took as ended for good also marks the requeue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from projections.requeue_rules import RequeueRules, defers_release, requeue_after_end
from projections.stats import FINISHED, cpus_held

__all__ = ["ACTIVE_STATES", "Touched", "Views"]

ACTIVE_STATES = frozenset({"PENDING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED"})
Row = dict[str, Any]
_DEFAULT_RULES = RequeueRules()


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
    requeue_rules: dict[str, RequeueRules] = field(default_factory=dict)
    """Per shard: the requeue rules of the cluster configuration in force there."""
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

    def rules(self, shard: str) -> RequeueRules:
        """The requeue rules of ``shard`` (Slurm's defaults until it applies a configuration)."""
        return self.requeue_rules.get(shard) or _DEFAULT_RULES

    def job(self, ref: str) -> Row | None:
        """A job by SLUID or by numeric id."""
        if ref.isdigit():
            sluid = self.job_ids.get(int(ref))
            return None if sluid is None else self.jobs.get(sluid)
        return self.jobs.get(ref)


def _job_queued(v: Views, r: Row, t: Touched) -> None:
    spec = r["spec"]
    described = {
        "name": spec.get("name", ""), "user": spec.get("user", ""),
        "account": spec.get("account", ""),
        "partition": spec.get("partition", "") or v.default_partition, "qos": spec.get("qos", ""),
        "nodes_min": spec.get("nodes_min", 1), "gpus_per_node": spec.get("gpus_per_node", 0),
        "cpus_per_task": spec.get("cpus_per_task", 1), "ntasks": spec.get("ntasks", 1),
        "time_limit_s": spec.get("time_limit_s", 0), "workdir": spec.get("workdir", ""),
        "command": spec.get("command", []),
        "nodes_max": spec.get("nodes_max", 0), "mem_per_node_mb": spec.get("mem_per_node_mb", 0),
        "exclusive": spec.get("exclusive", False), "gpu_type": spec.get("gpu_type", ""),
        "requeue": spec.get("requeue") or ("yes" if v.rules(r["shard"]).job_requeue else "no"),
    }
    known = v.jobs.get(r["job_sluid"])
    if known is not None and known.get("state") == "PENDING" and known.get("job_id") == r["job_id"]:
        known.update(described)  # an update of a pending job: its state, hold, runs stay
        t.jobs.add(r["job_sluid"])
        return
    v.jobs[r["job_sluid"]] = {
        "job_id": r["job_id"], "job_sluid": r["job_sluid"], **described,
        "state": "PENDING", "reason": "None", "priority": 0, "flags": [],
        "submit_ms": r["time_ms"], "start_ms": 0, "end_ms": 0,
        "nodes": [], "run_sluid": "", "exit_code": 0, "signal": 0, "runs": [],
        "array_job_sluid": r.get("array_job_sluid", ""),
        "array_task_id": r.get("array_task_id", -1),
        "restart_count": 0,
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
    if job["runs"]:  # a previous run whose nodes the ledger never gave back
        _release(v, job, job["runs"][-1], None, t)
    job.update(state="RUNNING", reason="None", start_ms=r["time_ms"], nodes=list(r["nodes"]),
               run_sluid=r["run_sluid"], segments=r.get("segments", []),
               restart_count=r.get("restart_count", 0), kill_reason="", flags=[])
    if r.get("partition"):
        job["partition"] = r["partition"]
    job["runs"].append({
        "run_sluid": r["run_sluid"], "restart_count": r.get("restart_count", 0),
        "start_ms": r["time_ms"], "end_ms": 0, "state": "RUNNING", "exit_code": 0,
        "signal": 0, "nodes": list(r["nodes"]), "requeue_reason": "",
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
    if job["state"] == "RUNNING" and r.get("run_sluid", job["run_sluid"]) == job["run_sluid"]:
        job["flags"] = sorted({*job["flags"], "COMPLETING"})
        job["kill_reason"] = r["reason"]


@_with_job
def _job_ended(v: Views, job: Row, r: Row, t: Touched) -> None:
    run_sluid = r.get("run_sluid", "")
    run = _run(job, run_sluid)
    if run is not None and run["end_ms"] == 0:
        run.update(end_ms=r["time_ms"], state=r["state"], exit_code=r.get("exit_code", 0),
                   signal=r.get("signal", 0))
    current = job["state"] == "RUNNING" and bool(run_sluid) and run_sluid == job["run_sluid"]
    requeue = ""
    if current:
        requeue = requeue_after_end(str(job.get("requeue", "yes")), job.get("kill_reason", ""),
                                    r["state"], int(r.get("exit_code", 0)), v.rules(r["shard"]))
    job.update(end_ms=r["time_ms"], exit_code=r.get("exit_code", 0), signal=r.get("signal", 0),
               reason=r.get("reason") or "None")
    if current and (requeue or r["state"] == "REQUEUED"):  # REQUEUED: always requeued
        _requeue_pending(job, run, requeue)
        down = [n for n in job["nodes"] if _service(v.nodes.get(n)) == "DOWN"]
        _release(v, job, run, down, t)
        return
    job["state"] = r["state"]
    job["flags"] = []
    if job["runs"]:  # the run, or (a cancel while a requeue waited) the run that was completing
        _release(v, job, run or job["runs"][-1], None, t)


def _requeue_pending(job: Row, run: Row | None, reason: str) -> None:
    """The job waits for its run's epilogs, then is requeued: Slurm's PENDING + COMPLETING."""
    job.update(state="PENDING", requeue_reason=reason)
    job["flags"] = sorted({*(f for f in job["flags"] if f == "EXPEDITING"), "COMPLETING"})
    if run is not None:
        run["requeue_reason"] = reason


def _run(job: Row, run_sluid: str) -> Row | None:
    if not run_sluid:
        return None
    return next((run for run in reversed(job["runs"]) if run["run_sluid"] == run_sluid), None)


def _service(row: Row | None) -> str:
    return "" if row is None else str(row.get("service", row.get("state", "")))


def _release(v: Views, job: Row, run: Row | None, names: list[str] | None, t: Touched) -> None:
    """Give back the nodes ``names`` (all the run's nodes when None) that ``run`` still holds."""
    if run is None:
        return
    for name in run["nodes"] if names is None else names:
        row = v.nodes.get(name)
        if row is None or run["run_sluid"] not in row["runs"]:
            continue
        row["runs"] = [x for x in row["runs"] if x != run["run_sluid"]]
        row["jobs"] = [x for x in row["jobs"] if x != job["job_id"]]
        _show_state(v, row)
        t.nodes.add(name)


def _completing(job: Row, run_sluid: str) -> bool:
    """Whether ``job`` waits for the epilogs of run ``run_sluid`` before its requeue."""
    return (job["state"] == "PENDING" and "COMPLETING" in job["flags"]
            and bool(run_sluid) and job["run_sluid"] == run_sluid)


@_with_job
def _node_epilog_completed(v: Views, job: Row, r: Row, t: Touched) -> None:
    run = _run(job, r["run_sluid"])
    if run is None or run is not job["runs"][-1] or job["run_sluid"] != r["run_sluid"]:
        return
    if job["state"] in FINISHED and r.get("ok"):
        # only an awaited epilog is reported ok: the core is requeueing this run
        _requeue_pending(job, run, "")
    if _completing(job, r["run_sluid"]) and not defers_release(
            str(job.get("requeue", "")), str(job.get("requeue_reason", ""))):
        _release(v, job, run, [r["name"]], t)


@_with_job
def _job_held(v: Views, job: Row, r: Row, t: Touched) -> None:
    job["reason"] = "JobHeldAdmin" if r.get("admin") else "JobHeldUser"
    job["priority"] = 0


@_with_job
def _job_released(v: Views, job: Row, r: Row, t: Touched) -> None:
    job["reason"] = "None"
    job["flags"] = [f for f in job["flags"] if f != "SPECIAL_EXIT"]


@_with_job
def _job_expediting(v: Views, job: Row, r: Row, t: Touched) -> None:
    run = _run(job, r["run_sluid"])
    if job["state"] in FINISHED:
        if run is None or run is not job["runs"][-1] or job["run_sluid"] != r["run_sluid"]:
            return
        # the core expedites only a run whose requeue is pending
        _requeue_pending(job, run, "NODE_FAIL" if r.get("trigger") == "NODE_FAIL"
                         else "EXIT_NONZERO")
    job["flags"] = sorted({*job["flags"], "EXPEDITING"})


@_with_job
def _job_requeued(v: Views, job: Row, r: Row, t: Touched) -> None:
    reason = ("JobHeldUser" if r["held"] else
              "BeginTime" if r["begin_time_ms"] > r["time_ms"] else "None")
    run = _run(job, r["run_sluid"])
    if run is not None:
        run["requeue_reason"] = r["reason"]
        _release(v, job, run, None, t)
    job.update(state="PENDING", reason=reason, nodes=[], run_sluid="", end_ms=0,
               restart_count=r["restart_count"], requeue_reason=r["reason"], kill_reason="")
    if r["held"]:
        job["priority"] = 0
    flags = {"EXPEDITING"} if r["expedite"] else set()
    if r["reason"] == "SPECIAL_EXIT":  # Slurm's job_hold_requeue: JOB_SPECIAL_EXIT, held
        flags.add("SPECIAL_EXIT")
    job["flags"] = sorted(flags)


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
    held = row.get("jobs")
    if not held:
        row["state"] = "IDLE"
        return
    cpus, used, jobs, ids = int(row.get("cpus", 0)), 0, v.jobs, v.job_ids
    for job_id in held:
        job = jobs.get(ids.get(job_id, ""))
        if job is not None:
            used += cpus_held(job, row)
            if used >= cpus:  # no CPU left: no need to count the rest
                row["state"] = "ALLOCATED"
                return
    row["state"] = "MIXED"


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
        requeue_rules_of,
    )

    v.configs[r["kind"]] = {"kind": r["kind"], "config_sluid": r["config_sluid"],
                            "digest": r["digest"], "applied_ms": r["time_ms"]}
    if r.get("kind") == "cluster":
        v.default_partition = default_partition_of(r.get("text", ""), v.default_partition)
        v.requeue_rules[r["shard"]] = requeue_rules_of(r.get("text", ""), v.rules(r["shard"]))
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
    "NodeEpilogCompleted": _node_epilog_completed,
    "NodeRegistered": _node_registered,
    "NodeStateChanged": _node_state_changed,
    "ConfigApplied": _config_applied,
}
