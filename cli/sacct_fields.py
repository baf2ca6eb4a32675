"""sacct fields beyond the job rows' own (``sluice history --format``): the ones Slurm derives
from what Sluice also knows, and the usage counters Sluice does not collect.

Derived (per line, from its other values): ``NCPUS`` (= AllocCPUS), ``AllocNodes``,
``CPUTime``/``CPUTimeRAW`` (elapsed times allocated CPUs), ``AllocTRES``/``ReqTRES``
(``cpu=…,mem=…,node=…``, billing = CPUs), ``Cluster``, ``UID``/``GID``/``Group`` (the
user's, from this host's user database), ``DerivedExitCode`` (``cli.history_cmd``: the
highest exit of the run's srun steps, the batch step left out, as Slurm's; empty on a step),
``ArrayJobID``/``ArrayTaskID``, ``Eligible`` (``cli.history_cmd``: the ``--begin`` time when
later than Submit, a requeued job's new one; a step's start), ``Suspended`` (Sluice suspends no
job: ``00:00:00``).

Not collected (Slurm's ``jobacct_gather`` counters: ``MaxRSS``, ``AveCPU``, ``TotalCPU``, disk
and energy …): the column is printed empty, as sacct prints it with ``JobAcctGatherType=
jobacct_gather/none``, so a script that asks for them still runs.
"""

from __future__ import annotations

import grp
import pwd

from cli.formats import elapsed, mem_size

__all__ = ["EXTRA_FIELDS", "add_derived"]

_DERIVED: dict[str, tuple[str, str, int, bool]] = {
    "ncpus": ("ncpus", "NCPUS", 10, True), "allocnodes": ("nnodes", "AllocNodes", 10, True),
    "cputime": ("cpu_time", "CPUTime", 10, True),
    "cputimeraw": ("cpu_time_raw", "CPUTimeRAW", 10, True),
    "alloctres": ("alloc_tres", "AllocTRES", 10, True),
    "reqtres": ("req_tres", "ReqTRES", 10, True), "cluster": ("cluster", "Cluster", 10, True),
    "uid": ("uid", "UID", 6, True), "gid": ("gid", "GID", 6, True),
    "group": ("group", "Group", 9, True),
    "derivedexitcode": ("derived_exit_code", "DerivedExitCode", 15, True),
    "arrayjobid": ("array_job_id", "ArrayJobID", 13, True),
    "arraytaskid": ("array_task_id", "ArrayTaskID", 11, True),
    "eligible": ("eligible", "Eligible", 19, True),
    "suspended": ("suspended", "Suspended", 10, True),
}
_NOT_COLLECTED = (
    ("MaxRSS", 10), ("MaxRSSNode", 10), ("MaxRSSTask", 10), ("AveRSS", 10), ("MaxVMSize", 10),
    ("MaxVMSizeNode", 13), ("MaxVMSizeTask", 13), ("AveVMSize", 10), ("MaxPages", 8),
    ("AvePages", 10), ("AveCPU", 10), ("MinCPU", 10), ("TotalCPU", 10), ("UserCPU", 10),
    ("SystemCPU", 10), ("AveCPUFreq", 10), ("MaxDiskRead", 12), ("AveDiskRead", 12),
    ("MaxDiskWrite", 12), ("AveDiskWrite", 12), ("ConsumedEnergy", 14),
    ("ConsumedEnergyRaw", 17), ("TRESUsageInTot", 14), ("TRESUsageOutTot", 15),
)
EXTRA_FIELDS: dict[str, tuple[str, str, int, bool]] = {
    **_DERIVED,
    **{name.lower(): ("", name, width, True) for name, width in _NOT_COLLECTED},
}
"""lower-case name → (key, header, width, right-justified); key "" prints empty."""


def add_derived(row: dict[str, str], cluster: str) -> None:
    """Add the derived fields' values to one sacct line (its other values already set)."""
    cpus, nodes = _number(row.get("alloc_cpus")), row.get("nnodes", "")
    seconds = _number(row.get("elapsed_raw"))
    mem = mem_size(_number(row.get("req_mem_mb")))  # a TRES's mem=: scontrol's units
    row["ncpus"] = str(cpus)
    row["cpu_time_raw"] = str(seconds * cpus)
    row["cpu_time"] = elapsed(seconds * cpus)
    memory = f"mem={mem}," if mem != "0" else ""
    row["alloc_tres"] = f"billing={cpus},cpu={cpus},{memory}node={nodes}" if cpus else ""
    requested = _number(row.get("cpus"))
    row["req_tres"] = f"billing={requested},cpu={requested},{memory}node={nodes}"
    row["cluster"], row["suspended"] = cluster, "00:00:00"
    user = row.get("user", "")
    try:
        entry = pwd.getpwnam(user) if user else None
    except KeyError:
        entry = None
    if entry is not None:
        row["uid"], row["gid"] = str(entry.pw_uid), str(entry.pw_gid)
        try:
            row["group"] = grp.getgrgid(entry.pw_gid).gr_name
        except KeyError:
            row["group"] = str(entry.pw_gid)


def _number(text: str | None) -> int:
    return int(text) if text and text.isdecimal() else 0
