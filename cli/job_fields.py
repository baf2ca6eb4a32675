"""A job row of the views as Slurm's commands print its fields: squeue's ``%`` codes and
``-O`` names, and the values sacct and ``scontrol show job`` share.

:func:`job_values` turns one row (and, for sacct, one of its runs) into text by key; the tables
map Slurm's field codes onto those keys, with Slurm's headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cli.dependency_shown import shown_dependency
from cli.formats import elapsed, host_list, mem_size, slurm_time, time_limit
from cli.squeue_fields import EXTRA_CODES, EXTRA_NAMES, extra_values
from cli.timefmt import format_duration
from projections.job_states import short_state, shown_reason, shown_state

__all__ = ["SQUEUE_CODES", "SQUEUE_FIELDS", "STATE_NAMES", "job_cpus", "job_id_text", "job_mem_mb",
           "job_values", "state_filter"]

# squeue -o: letter → (key, header)
SQUEUE_CODES: dict[str, tuple[str, str]] = {
    "A": ("job_id_raw", "JOBID"), "a": ("account", "ACCOUNT"),
    "b": ("tres_per_node", "TRES_PER_NODE"),
    "C": ("cpus", "CPUS"), "c": ("min_cpus", "MIN_CPUS"), "D": ("nnodes", "NODES"),
    "E": ("dependency", "DEPENDENCY"), "e": ("end", "END_TIME"),
    "F": ("array_job_id", "ARRAY_JOB_ID"),
    "f": ("features", "FEATURES"), "i": ("job_id", "JOBID"), "j": ("name", "NAME"),
    "K": ("array_task_id", "ARRAY_TASK_ID"), "k": ("comment", "COMMENT"),
    "L": ("time_left", "TIME_LEFT"), "l": ("time_limit", "TIME_LIMIT"),
    "M": ("time_used", "TIME"), "m": ("min_memory", "MIN_MEMORY"), "N": ("nodelist", "NODELIST"),
    "n": ("req_nodes", "REQ_NODES"), "o": ("command", "COMMAND"), "P": ("partition", "PARTITION"),
    "p": ("priority", "PRIORITY"), "Q": ("priority", "PRIORITY"), "q": ("qos", "QOS"),
    "R": ("reason_list", "NODELIST(REASON)"), "r": ("reason", "REASON"),
    "S": ("start", "START_TIME"), "T": ("state", "STATE"), "t": ("state_compact", "ST"),
    "u": ("user", "USER"), "V": ("submit", "SUBMIT_TIME"), "v": ("reservation", "RESERVATION"),
    "x": ("exc_nodes", "EXC_NODES"),
    "y": ("nice", "NICE"), "Z": ("workdir", "WORK_DIR"), "Y": ("sched_nodes", "SCHEDNODES"),
}
_O_NAMES = {
    "jobid": "i", "jobarrayid": "i", "arrayjobid": "F", "arraytaskid": "K", "name": "j",
    "username": "u", "partition": "P", "state": "T", "statecompact": "t", "timeused": "M",
    "timelimit": "l", "timeleft": "L", "numnodes": "D", "nodelist": "N", "reason": "r",
    "reasonlist": "R", "numcpus": "C", "qos": "q", "account": "a", "priority": "Q",
    "submittime": "V", "starttime": "S", "endtime": "e", "workdir": "Z", "command": "o",
    "dependency": "E", "feature": "f", "comment": "k", "minmemory": "m", "nice": "y",
    "reqnodes": "n", "excnodes": "x", "tres-per-node": "b", "mincpus": "c", "reservation": "v",
}
SQUEUE_CODES.update(EXTRA_CODES)
# squeue -O: lower-case name → (key, header, width, right)
SQUEUE_FIELDS: dict[str, tuple[str, str, int, bool]] = {
    **{name: (SQUEUE_CODES[code][0], SQUEUE_CODES[code][1], 20, False)
       for name, code in _O_NAMES.items()},
    **{name: (key, header, 20, False) for name, (key, header) in EXTRA_NAMES.items()},
}
STATE_NAMES = {
    "PD": "PENDING", "R": "RUNNING", "CG": "COMPLETING", "CD": "COMPLETED", "CA": "CANCELLED",
    "F": "FAILED", "TO": "TIMEOUT", "NF": "NODE_FAIL", "PR": "PREEMPTED", "S": "SUSPENDED",
    "BF": "BOOT_FAIL", "DL": "DEADLINE", "OOM": "OUT_OF_MEMORY", "RQ": "REQUEUED",
    "RH": "REQUEUE_HOLD", "SE": "SPECIAL_EXIT", "RJ": "REJECTED", "EX": "EXPEDITING",
    "RD": "RESV_DEL_HOLD",
}
_ENDED = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
          "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REJECTED", "DENIED"}


def state_filter(text: str, option: str) -> frozenset[str] | None:
    """``-t``/``-s``: long state names for a comma list of short or long ones (``all``: None)."""
    wanted = set()
    for item in filter(None, (i.strip().upper() for i in text.split(","))):
        if item == "ALL":
            return None
        name = STATE_NAMES.get(item, item)
        if name not in STATE_NAMES.values() and name not in _ENDED:
            raise ValueError(f"{option}: invalid job state {item!r} (e.g. PD, R, CG, CD, CA, F, "
                             "TO, NF, or PENDING, RUNNING...)")
        wanted.add(name)
    return frozenset(wanted)


def ended(row: Mapping[str, Any]) -> bool:
    """True when the job's base state is a final one."""
    return str(row["state"]) in _ENDED


def job_id_text(row: Mapping[str, Any], base_ids: Mapping[str, int]) -> str:
    """Slurm's job id: ``ID``, or ``BASE_TASK`` for an array task."""
    task = int(row.get("array_task_id", -1))
    if task < 0:
        return str(row["job_id"])
    base = base_ids.get(str(row.get("array_job_sluid", "")), int(row["job_id"]))
    return f"{base}_{task}"


def job_names(job: Mapping[str, Any], base_ids: Mapping[str, int]) -> set[str]:
    """What ``-j`` may call a job (squeue, sacct): its id, SLUID, ``BASE_TASK`` and, for a
    task, the array's id (``-j 7`` names every task of array 7)."""
    names = {str(job["job_id"]), str(job.get("job_sluid") or job["job_id"])}
    task = int(job.get("array_task_id", -1))
    if task >= 0:
        base = (base_ids.get(str(job.get("array_job_sluid", "")))
                or job.get("array_job_id") or job["job_id"])
        names |= {str(base), f"{base}_{task}"}
    return names


def job_cpus(row: Mapping[str, Any]) -> int:
    """The job's CPUs as Slurm counts them (squeue ``%C``, scontrol ``NumCPUs``): those its
    nodes gave it (``alloc``) once it holds nodes, else those it asks: its tasks times their
    CPUs, one a node at least."""
    held = row.get("alloc") if row.get("nodes") else None
    if isinstance(held, dict) and held:
        return sum(int(share[0]) for share in held.values())
    asked = int(row.get("cpus_per_task") or 1) * int(row.get("ntasks") or 1)
    return max(asked, int(row.get("nodes_min") or 1))


def job_mem_mb(row: Mapping[str, Any]) -> int:
    """The job's memory in MB as Slurm's TRES counts it (scontrol's ``TRES=…mem=``, sacct's
    ``ReqMem``): ``--mem`` times its nodes, or ``--mem-per-cpu`` times its CPUs; 0 for none."""
    per_cpu = int(row.get("mem_per_cpu_mb") or 0)
    if per_cpu > 0:
        return per_cpu * job_cpus(row)
    nodes = len(row.get("nodes") or ()) or int(row.get("nodes_min") or 1)
    return max(int(row.get("mem_per_node_mb") or 0), 0) * nodes


def job_values(row: Mapping[str, Any], now_ms: int,
               base_ids: Mapping[str, int]) -> dict[str, str]:
    """Every squeue/sacct/scontrol key of one job row, as text."""
    state, flags = str(row["state"]), row.get("flags", [])
    running = state == "RUNNING" or "COMPLETING" in flags
    started = row["start_ms"] and not (state == "PENDING" and not running)  # a requeued job's
    used_s = ((row.get("end_ms") or now_ms) - row["start_ms"]) // 1000 if started else 0  # 0:00
    limit = int(row.get("time_limit_s") or 0)
    nodes = list(row.get("nodes", []))
    nodelist = host_list(nodes) if nodes else ""
    nnodes = len(nodes) if running and nodes else int(row.get("nodes_min") or 1)
    cpus = job_cpus(row)
    base = row.get("array_job_sluid", "")
    gpus = int(row.get("gpus_per_node") or 0)
    mem = int(row.get("mem_per_node_mb") or 0)
    reason = shown_reason(state, str(row.get("reason") or "None"), int(row.get("signal") or 0))
    return {
        "job_id": job_id_text(row, base_ids), "job_id_raw": str(row["job_id"]),
        "array_job_id": str(base_ids.get(str(base), row["job_id"])) if base else str(row["job_id"]),
        "array_task_id": str(row["array_task_id"]) if int(row.get("array_task_id", -1)) >= 0
        else "N/A",
        "name": str(row.get("name", "")), "user": str(row.get("user", "")),
        "account": str(row.get("account", "")), "partition": str(row.get("partition", "")),
        "qos": str(row.get("qos", "")), "state": shown_state(state, flags),
        "state_compact": short_state(state, flags),
        "time_used": format_duration(used_s), "elapsed": elapsed(used_s),
        "elapsed_raw": str(used_s),
        "time_limit": time_limit(limit), "timelimit": time_limit(limit, sacct=True),
        "time_left": time_limit(max(limit - used_s, 0)) if limit else "UNLIMITED",
        "nnodes": str(nnodes), "nodelist": nodelist if running else "",
        "reason": reason,
        "reason_list": nodelist if running else f"({reason})",
        "cpus": str(cpus), "min_cpus": str(int(row.get("cpus_per_task") or 1)),
        "priority": str(row.get("priority", 0)), "submit": slurm_time(row.get("submit_ms", 0)),
        "start": slurm_time(row.get("planned_start_ms", row["start_ms"])),
        "end": _end_time(row, running, limit),
        "workdir": str(row.get("workdir", "")), "command": " ".join(row.get("command", [])),
        "reservation": str(row.get("reservation", "")) or "(null)",
        "dependency": shown_dependency(row),
        "features": str(row.get("constraint", "")) or "(null)",
        "comment": str(row.get("comment", "")) or "(null)",
        "admin_comment": str(row.get("admin_comment", "")), "extra": str(row.get("extra", "")),
        # squeue's %m: --mem-per-cpu's value when given, else --mem's (MEM_PER_CPU masked off)
        "min_memory": mem_size(int(row.get("mem_per_cpu_mb") or 0) or mem),
        "nice": str(row.get("nice", 0)),
        "req_nodes": str(row.get("nodelist", "")), "exc_nodes": str(row.get("exclude", "")),
        "tres_per_node": f"gres/gpu:{gpus}" if gpus else "N/A",
        "exit_code": f"{row.get('exit_code', 0)}:{row.get('signal', 0)}",
        "req_mem": mem_size(job_mem_mb(row)), "req_mem_mb": str(job_mem_mb(row)),
        # the nodes a pending job is planned on (squeue --start: cli.queue_starts)
        "sched_nodes": str(row.get("sched_nodes") or "(null)"),
        **extra_values(row, running, cpus),
    }


def _end_time(row: Mapping[str, Any], running: bool, limit: int) -> str:
    """squeue's END_TIME: the end of an ended job; a running job's start plus its time limit
    (slurmctld's end_time), ``NONE`` without a limit; ``N/A`` before the start."""
    if row.get("end_ms"):
        return slurm_time(int(row["end_ms"]))
    if running and row.get("start_ms"):
        return slurm_time(int(row["start_ms"]) + limit * 1000) if limit else "NONE"
    return "N/A"
