"""Slurm jobcomp/kafka-compatible JSON records, built from ledger facts and the job's view row.

Field names follow Slurm 25.05+'s ``jobcomp_common_job_record_to_data``: a *start* record
(``state`` ``RUNNING``) when a run starts, published on ``<cluster>-job-start``, and a *finish*
record on ``<cluster>`` at every terminal transition of a run (``COMPLETED``, ``FAILED``,
``NODE_FAIL``… including one that is requeued). Times are UTC ``YYYY-MM-DDTHH:MM:SS``;
durations are seconds; ``exit_code`` and ``derived_ec`` are ``"exit:signal"``. Fields Slurm
omits when unset are omitted here too. ``sluid`` and ``original_sluid`` both carry the run
SLUID (Sluice never resizes a run); ``job_sluid`` is a Sluice addition (the job's SLUID).
"""

from __future__ import annotations

import grp
import pwd
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from projections.legacy import spec_alloc
from schemas.ranges import MAX_TIME_MS

__all__ = ["finish_record", "slurm_time", "start_record", "tres_text"]

Row = Mapping[str, Any]


def slurm_time(ms: int) -> str:
    """Unix milliseconds as Slurm writes ``@start``: UTC, seconds, no zone suffix. A time
    outside 1970 … 9999 (a fact any PLAINTEXT client could write) is clamped to those bounds:
    ``datetime`` raised, inside the views' fold, which does not catch the notifier's errors."""
    ms = min(max(ms, 0), MAX_TIME_MS)
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _hostlist(nodes: list[str]) -> str:
    try:
        from scheduler.topology.hostlist import compress  # noqa: PLC0415

        return str(compress(nodes))
    except ImportError:
        return ",".join(nodes)


def _ids(user: str) -> dict[str, Any]:
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return {"user_id": None, "groupname": "", "group_id": None}
    try:
        group = grp.getgrgid(entry.pw_gid).gr_name
    except KeyError:
        group = ""
    return {"user_id": entry.pw_uid, "groupname": group, "group_id": entry.pw_gid}


def tres_text(cpus: int, mem_mb: int, nodes: int, gpus: int) -> str:
    """Slurm's TRES string: ``cpu=8,mem=2048M,node=2,billing=8,gres/gpu=4``."""
    parts = [f"cpu={cpus}"]
    if mem_mb:
        parts.append(f"mem={mem_mb}M")
    parts += [f"node={nodes}", f"billing={cpus}"]
    if gpus:
        parts.append(f"gres/gpu={gpus}")
    return ",".join(parts)


def _allocated(job: Row, nodes: list[str]) -> tuple[int, int, int]:
    """CPUs, memory MB and GPUs the run holds on ``nodes`` (``JobStarted``'s allocation)."""
    alloc = job.get("alloc", {})
    shares = [alloc.get(n) or spec_alloc(job, None) for n in nodes]
    return (sum(int(s[0]) for s in shares), sum(int(s[1]) for s in shares),
            sum(int(s[2]) for s in shares))


def _requested(job: Row) -> str:
    """``tres_req``: the minimum node count times what the job asks per node."""
    nodes = max(int(job.get("nodes_min", 1)), 1)
    cpus, mem_mb, gpus = spec_alloc({**job, "exclusive": False}, None)
    return tres_text(cpus * nodes, mem_mb * nodes, nodes, gpus * nodes)


def _common(job: Row, cluster: str, run_sluid: str, nodes: list[str], start_ms: int,
            eligible_ms: int) -> dict[str, Any]:
    user = str(job.get("user", ""))
    cpus, mem_mb, gpus = _allocated(job, nodes)
    record: dict[str, Any] = {
        "jobid": int(job.get("job_id") or 0),
        "sluid": run_sluid, "original_sluid": run_sluid,
        "container": "", "username": user, **_ids(user),
        "partition": str(job.get("partition", "")), "alloc_node": "",
        "nodes": _hostlist(nodes), "total_cpus": cpus,
        "total_nodes": len(nodes),
    }
    if start_ms:
        record["@start"] = slurm_time(start_ms)
    if int(job.get("priority", 0)):
        record["priority"] = int(job["priority"])
    record["@submit"] = slurm_time(int(job.get("submit_ms", 0)))
    record["@eligible"] = slurm_time(eligible_ms)
    if start_ms:
        record["@queue_wait"] = max(start_ms - eligible_ms, 0) // 1000
    optional = {"work_dir": job.get("workdir", ""), "cluster": cluster, "qos": job.get("qos", ""),
                "job_name": job.get("name", ""), "account": job.get("account", "")}
    record.update({k: v for k, v in optional.items() if v})
    record["ntasks"] = int(job.get("ntasks", 1))
    record["cpus_per_task"] = int(job.get("cpus_per_task", 1))
    if int(job.get("time_limit_s", 0)):
        record["time_limit"] = int(job["time_limit_s"]) // 60
    if job.get("array_task_id", -1) not in (-1, None):
        record["array_task_id"] = int(job["array_task_id"])
    if nodes:
        record["tres_alloc"] = tres_text(cpus, mem_mb, len(nodes), gpus)
    record["tres_req"] = _requested(job)
    record["job_sluid"] = str(job.get("job_sluid", ""))
    return record


def start_record(job: Row, started: Row, cluster: str, eligible_ms: int) -> dict[str, Any]:
    """The jobcomp start record of the run ``started`` (a JobStarted fact)."""
    record = _common(job, cluster, str(started["run_sluid"]), list(started["nodes"]),
                     int(started["time_ms"]), eligible_ms)
    record["state"] = "RUNNING"
    return record


def finish_record(job: Row, ended: Row, cluster: str, eligible_ms: int) -> dict[str, Any]:
    """The jobcomp finish record of a run (or of a job that never ran) from its JobEnded."""
    run_sluid = str(ended.get("run_sluid", ""))
    run = next((r for r in job.get("runs", []) if r["run_sluid"] == run_sluid), None)
    start_ms = int(run["start_ms"]) if run else 0
    nodes = list(run["nodes"]) if run else []
    end_ms = int(ended["time_ms"])
    record = _common(job, cluster, run_sluid or str(job.get("job_sluid", "")), nodes, start_ms,
                     eligible_ms)
    exit_code, signal = int(ended.get("exit_code", 0)), int(ended.get("signal", 0))
    elapsed = max(end_ms - start_ms, 0) // 1000 if start_ms else 0
    record.update({
        "@end": slurm_time(end_ms), "elapsed": elapsed, "state": str(ended.get("state", "")),
        "exit_code": f"{exit_code}:{signal}", "derived_ec": f"{exit_code}:{signal}",
        "cpu_hours": round(elapsed * record["total_cpus"] / 3600, 6),
    })
    return record
