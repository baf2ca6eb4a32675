"""Audit: every fact of one job, in decision order, with the reason for each decision.

For each fact about the job (``JobQueued``, ``JobPending``, ``JobStarted``, ``RunKillRequested``,
``JobEnded``, holds, rejections…) :func:`audit_job` writes one entry: when, which shard and
sequence number, and a sentence saying what was decided and why: the pending reason with
Slurm's explanation, and for a start the nodes chosen together with the state every node of the
partition was in at that moment (folded from the ledger up to the fact before the start), so a
reader can see why the job ran where it ran and not elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from projections.replay import Fact, iso, merge
from projections.views import Views

__all__ = ["PENDING_REASONS", "AuditEntry", "audit_job", "find_job"]

PENDING_REASONS: dict[str, str] = {
    "None": "eligible; it will be considered at the next scheduling pass",
    "Priority": "one or more higher priority jobs exist for this partition",
    "Resources": "the job is waiting for resources to become available",
    "BeginTime": "the job's earliest start time has not yet been reached",
    "Dependency": "the job is waiting for a job it depends on",
    "DependencyNeverSatisfied": "the job's dependency can never be satisfied",
    "JobHeldUser": "the job is held by its user",
    "JobHeldAdmin": "the job is held by an operator",
    "PartitionTimeLimit": "the job's time limit exceeds its partition's limit",
    "PartitionNodeLimit": "the job's node count is outside its partition's limits",
    "PartitionDown": "the job's partition is down",
    "PartitionInactive": "the job's partition is inactive and starts no jobs",
    "QOSMaxJobsPerUserLimit": "the user has the most running jobs the QOS allows",
    "QOSMaxWallDurationPerJobLimit": "the job's time limit exceeds its QOS's MaxWall",
    "QOSGrpCpuLimit": "every CPU the QOS may use is in use",
    "QOSGrpGRES": "every GPU the QOS may use is in use",
    "QOSGrpNodeLimit": "every node the QOS may use is in use",
    "QOSGrpMemLimit": "all the memory the QOS may use is in use",
    "AssocGrpCpuLimit": "every CPU the account (or a parent account) may use is in use",
    "AssocGrpMemLimit": "all the memory the account (or a parent account) may use is in use",
    "AssocGrpNodeLimit": "every node the account (or a parent account) may use is in use",
    "AssocGrpGRES": "every GPU the account (or a parent account) may use is in use",
    "AssocGrpJobsLimit": "the account (or a parent account) runs as many jobs as it may",
    "AssocMaxJobsLimit": "the user runs as many jobs in the account as it allows",
    "AssocMaxWallDurationPerJobLimit": "the job's time limit exceeds its account's MaxWall",
    "AssocMaxCpuPerJobLimit": "the job asks for more CPUs than its account allows a job",
    "AssocMaxMemPerJob": "the job asks for more memory than its account allows a job",
    "AssocMaxNodePerJobLimit": "the job asks for more nodes than its account allows a job",
    "AssocMaxGRESPerJob": "the job asks for more GPUs than its account allows a job",
    "JobArrayTaskLimit": "the array already runs as many tasks as it may",
    "NodeDown": "a node the job needs is down",
    "Cleaning": "the job's previous run is still cleaning up",
    "Reservation": "the job's reservation has not begun",
    "ReservationDeleted": ("the job's reservation was deleted or ended: held until its user "
                           "releases it, then it may run on any node"),
}
KILL_REASONS = {
    "CANCELLED": "the job was cancelled",
    "TIMEOUT": "the run reached its time limit",
    "PREEMPTED": "a higher priority job preempted it",
    "NODE_FAIL": "a node of the run failed",
    "REQUEUED": "requeued by request (its user or an operator: requeue)",
    "REQUEUE_HOLD": "an operator requeued the job, held",
    "PROLOG_FAILED": "a prolog failed",
    "TERMINATE": "a node held a run the scheduler had already ended (it came back after a "
                 "failure, or restarted): what is left of it is killed",
}
REQUEUE_REASONS = {
    "NODE_FAIL": "a node of the run failed",
    "EXIT_NONZERO": "the batch script exited non-zero (expedited requeue)",
    "ADMIN": "requeued by request (its user or an operator: requeue)",
    "PROLOG_FAILED": "a prolog failed",
    "REQUEUE_EXIT": "the batch script's exit code is in RequeueExit",
    "SPECIAL_EXIT": "the batch script's exit code is in RequeueExitHold (special exit, held)",
}


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One fact of the job and its explanation."""

    time_ms: int
    shard: str
    seq: int
    name: str
    text: str
    record: dict[str, Any]

    def line(self) -> str:
        return f"{iso(self.time_ms)} {self.shard}#{self.seq:<6} {self.name:<17} {self.text}"


_SUBMISSIONS = frozenset({"SubmitJob", "TestSubmitJob"})


def find_job(facts: Iterable[Fact], ref: str) -> str | None:
    """The job SLUID of ``ref`` (a job id or a job SLUID), or None.

    A submission whose credential was refused (``RequestDenied`` of a ``SubmitJob``:
    ``Unauthenticated``, ``UserMismatch``, ``CredentialExpired``...) never became a job, yet
    its SLUID is found, so that the audit shows the refusal rather than "no job".
    """
    denied = None
    for fact in facts:
        record = fact.record
        if fact.name in ("JobQueued", "JobRejected") and (
                record.get("job_sluid") == ref or str(record.get("job_id")) == ref):
            return str(record["job_sluid"])
        if (denied is None and fact.name == "RequestDenied"
                and record.get("request") in _SUBMISSIONS and record.get("subject_sluid") == ref):
            denied = ref
    return denied


def _spec_text(spec: Mapping[str, Any], partition: str) -> str:
    parts = [f"partition {partition or '(default)'}", f"{spec.get('nodes_min', 1)} node(s)",
             f"{spec.get('ntasks', 1)} task(s) x {spec.get('cpus_per_task', 1)} CPU"]
    if spec.get("gpus_per_node"):
        parts.append(f"{spec['gpus_per_node']} GPU(s) per node")
    if spec.get("mem_per_node_mb"):
        parts.append(f"{spec['mem_per_node_mb']} MB per node")
    if spec.get("time_limit_s"):
        parts.append(f"time limit {spec['time_limit_s']} s")
    if spec.get("exclusive"):
        parts.append("exclusive")
    if spec.get("segment"):
        parts.append(f"segments of {spec['segment']}")
    if spec.get("requeue"):
        parts.append(f"requeue={spec['requeue']}")
    return ", ".join(parts)


def _placement_text(views: Views, record: Mapping[str, Any]) -> str:
    """The nodes chosen, and what every node of the partition was doing just before."""
    chosen = list(record["nodes"])
    partition = str(record.get("partition", ""))
    others = []
    for name in sorted(views.nodes):
        node = views.nodes[name]
        if partition and partition not in node.get("partitions", []):
            continue
        if name in chosen:
            continue
        busy = f" running job(s) {','.join(str(j) for j in node['jobs'])}" if node.get(
            "jobs") else ""
        block = f" [{node['block']}]" if node.get("block") else ""
        others.append(f"{name}{block} {str(node.get('state', '')).lower()}{busy}")
    where = ", ".join(
        f"{n}{' [' + views.nodes[n]['block'] + ']' if views.nodes.get(n, {}).get('block') else ''}"
        for n in chosen)
    segments = record.get("segments") or []
    seg = ("; segments " + "; ".join(
        f"{s['index']}: {','.join(s['nodes'])}{' in ' + s['group'] if s.get('group') else ''}"
        for s in segments)) if segments else ""
    rest = "; the other nodes of the partition were: " + "; ".join(others) if others else (
        "; no other node of the partition existed")
    return f"on {where}{seg}{rest}"


def _not_running(job: Mapping[str, Any] | None) -> str:
    """A job that ended outside a run: it never ran, or (requeued) it waited to run again."""
    runs = len(job.get("runs") or ()) if job is not None else 0
    return f"job (pending again after {runs} run{'s' if runs > 1 else ''})" if runs else (
        "job (never ran)")


def _explain(name: str, record: Mapping[str, Any], before: Views,
             job: Mapping[str, Any] | None) -> str:
    if name == "JobQueued":
        spec = record["spec"]
        decided = {k: record[k] for k in ("time_limit_s", "requeue") if record.get(k)}
        partition = str(record.get("partition") or spec.get("partition", ""))
        return (f"queued as job {record['job_id']} for {spec.get('user', '')}: "
                f"{_spec_text({**spec, **decided}, partition)}")
    if name == "JobRejected":
        if job is not None and job.get("state") != "REJECTED":  # another submission refused
            return (f"another submission under this SLUID rejected: {record['reason']} — "
                    f"{record.get('detail', '')} (the job is unchanged)")
        return f"rejected: {record['reason']} — {record.get('detail', '')}"
    if name == "RequestDenied":
        who = record.get("requester") or "an unauthenticated client"
        return (f"{record['request']} by {who} refused: {record['reason']} — "
                f"{record.get('detail', '')} (nothing changed)")
    if name == "JobPending":
        reason = str(record["reason"])
        return (f"waits: {reason} — {PENDING_REASONS.get(reason, 'see Slurm job reason codes')}"
                f" (priority {record.get('priority', 0)})")
    if name == "JobStarted":
        waited = (int(record["time_ms"]) - int(record.get("submit_ms") or record["time_ms"]))
        run = f"run {record.get('restart_count', 0)} ({record['run_sluid']})"
        return (f"{run} started in {record.get('partition', '')} after {waited / 1000:.1f}s "
                f"{_placement_text(before, record)}")
    if name == "RunKillRequested":
        reason = str(record["reason"])
        why = KILL_REASONS.get(reason, "")
        return f"kill of run {record['run_sluid']}: {reason}" + (f" — {why}" if why else "")
    if name == "RunSignalled":
        who = record.get("requester") or ("the scheduler" if record["reason"] == "TIME_LIMIT"
                                          else "an operator")
        return (f"signal {record['signal']} to run {record['run_sluid']} ({record['scope']}): "
                f"{record['reason']} by {who}; the job keeps running")
    if name == "TimeLimitChanged":
        def limit(s: Any) -> str:
            return f"{int(s)} s" if int(s) else "UNLIMITED"
        who = record.get("requester") or "the system"
        return (f"time limit of run {record['run_sluid']} changed from "
                f"{limit(record['previous_s'])} to {limit(record['time_limit_s'])} by {who}")
    if name == "JobDetailsChanged":
        who = record.get("requester") or "an operator"
        shown = ", ".join(f"{key}={record[key]!r}" for key in record["changed"])
        return f"running job updated by {who}: {shown}"
    if name == "JobEnded":
        why = f" ({record['reason']})" if record.get("reason") else ""
        run = f"run {record['run_sluid']}" if record.get("run_sluid") else _not_running(
            before.jobs.get(str(record["job_sluid"])))
        requeue = (f"; the job will be requeued ({record.get('requeue_reason', '')}) once the "
                   "epilogs are in" if record.get("job_state") == "COMPLETING" else "")
        return (f"{run} ended {record['state']}{why}, exit code "
                f"{record.get('exit_code', 0)}:{record.get('signal', 0)}{requeue}")
    if name == "RunMissingNoted":
        node = record.get("name", "")
        if record.get("missing"):
            return (f"run {record['run_sluid']} missing from node {node}'s heartbeat (not running "
                    "there, or its exit reported but never received): it ends if still missing "
                    "after MissingRunGrace")
        return f"run {record['run_sluid']} running on node {node} again: not missing"
    if name == "JobExpediting":
        return (f"expediting (trigger {record.get('trigger', '')}): it will be requeued ahead of "
                "every other job once the epilogs of run "
                f"{record.get('run_sluid', '')} are done")
    if name == "NodeEpilogCompleted":
        ok = "ok" if record.get("ok") else f"FAILED ({record.get('detail', '')})"
        return f"epilog of run {record.get('run_sluid', '')} on {record.get('name', '')}: {ok}"
    if name == "JobRequeued":
        reason = str(record.get("reason", ""))
        how = ("held (JobHeldUser)" if record.get("held") else
               "expedited: eligible at once, ahead of all others" if record.get("expedite") else
               f"eligible from {iso(int(record['begin_time_ms']))}"
               if int(record.get("begin_time_ms", 0)) > int(record["time_ms"]) else
               "eligible now")
        return (f"requeued for run {record.get('restart_count', 0)}: {reason} — "
                f"{REQUEUE_REASONS.get(reason, '')}; {how}")
    if name == "JobHeld":
        return "held by an operator" if record.get("admin") else "held by its user"
    if name == "JobReleased":
        return "released"
    if name == "JobPrioritySet":
        return f"priority set to {record['priority']} by an operator (instead of multifactor)"
    fields = {k: v for k, v in record.items()
              if k not in ("event_sluid", "shard", "shard_seq", "time_ms", "job_sluid")}
    return ", ".join(f"{k}={v}" for k, v in fields.items())


def audit_job(facts: Iterable[Fact], job_sluid: str) -> list[AuditEntry]:
    """Every fact of ``job_sluid``, in decision order, explained."""
    views = Views()
    out = []
    for fact in merge(facts):
        record = fact.record
        if job_sluid in (record.get("job_sluid"), record.get("subject_sluid")):
            text = _explain(fact.name, record, views, views.jobs.get(job_sluid))
            out.append(AuditEntry(fact.time_ms, fact.shard, fact.seq, fact.name, text, record))
        views.apply(fact.name, record)
    return out
