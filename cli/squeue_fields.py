"""squeue's ``-o`` letters and ``-O`` names beyond :mod:`cli.job_fields`'s: the owner's ids,
the batch host, what Sluice does not track printed as squeue prints an unset value.

| ``-o`` | ``-O`` | value |
|---|---|---|
| ``%U`` | ``UserID`` | the owner's uid (this host's passwd; the name when it has none) |
| ``%G``, ``%g`` | ``GroupID``, ``GroupName`` | the owner's primary group |
| ``%B`` | ``BatchHost`` | the batch host of a job holding nodes, else ``n/a`` |
| ``%h`` | ``OverSubscribe`` | ``NO`` for ``--exclusive``, else ``OK`` |
| ``%d`` | ``MinTmpDisk`` | ``0`` (no disk is tracked) |
| ``%H`` ``%I`` ``%J`` | ``Sockets`` ``Cores`` ``Threads`` | ``*`` (not asked: not tracked) |
| ``%z`` | ``SCT`` | ``*:*:*`` |
| ``%O`` | ``Contiguous`` | ``0`` |
| ``%w`` | ``WCKey`` | ``(null)`` |
| | ``cpus-per-task``, ``NumTasks`` | ``-c``, ``-n`` |
| | ``EligibleTime`` | when the job may start (its ``--begin``, else its submission) |
| | ``exit_code`` | ``CODE:SIGNAL`` |
| | ``RestartCnt`` | requeues so far |
| | ``Requeue`` | ``1`` when the job is requeued on failure, else ``0`` |
| | ``tres-alloc`` | ``cpu=N,mem=M,node=K`` of a job holding nodes, else empty |
| | ``SchedNodes`` | the planned nodes of ``--start`` |
"""

from __future__ import annotations

import grp
import pwd
from functools import cache

from cli.formats import mem_size, slurm_time

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["EXTRA_CODES", "EXTRA_NAMES", "extra_values"]

EXTRA_CODES: dict[str, tuple[str, str]] = {
    "U": ("user_id", "USER"), "G": ("group_id", "GROUP"), "g": ("group_name", "GROUP"),
    "B": ("batch_host", "EXEC_HOST"), "h": ("oversubscribe", "OVER_SUBSCRIBE"),
    "d": ("min_tmp_disk", "MIN_TMP_DISK"), "H": ("sockets", "S"), "I": ("cores", "C"),
    "J": ("threads", "T"), "z": ("sct", "S:C:T"), "O": ("contiguous", "CONTIGUOUS"),
    "w": ("wckey", "WCKEY"),
}
"""squeue ``-o`` letter → (key, header), added to :data:`cli.job_fields.SQUEUE_CODES`."""
EXTRA_NAMES: dict[str, tuple[str, str]] = {
    "userid": ("user_id", "UID"), "groupid": ("group_id", "GROUP"),
    "groupname": ("group_name", "GROUP"), "batchhost": ("batch_host", "EXEC_HOST"),
    "oversubscribe": ("oversubscribe", "OVER_SUBSCRIBE"),
    "mintmpdisk": ("min_tmp_disk", "MIN_TMP_DISK"), "sockets": ("sockets", "SOCKETS"),
    "cores": ("cores", "CORES"), "threads": ("threads", "THREADS"), "sct": ("sct", "S:C:T"),
    "contiguous": ("contiguous", "CONTIGUOUS"), "wckey": ("wckey", "WCKEY"),
    "cpus-per-task": ("sq_cpus_per_task", "CPUS_PER_TASK"), "numtasks": ("sq_ntasks", "TASKS"),
    "eligibletime": ("sq_eligible", "ELIGIBLE_TIME"), "exit_code": ("exit_code", "EXIT_CODE"),
    "restartcnt": ("sq_restart_count", "RESTARTCNT"), "requeue": ("sq_requeue", "REQUEUE"),
    "tres-alloc": ("tres_alloc", "TRES_ALLOC"), "schednodes": ("sched_nodes", "SCHEDNODES"),
}
"""squeue ``-O`` lower-case name → (key, header), added to ``SQUEUE_FIELDS``."""


@cache
def _owner(user: str) -> tuple[str, str, str]:
    """(uid, gid, group name) of ``user`` on this host; the name itself when it has none."""
    try:
        entry = pwd.getpwnam(user)
    except (KeyError, ValueError):
        return user, user, user
    try:
        group = grp.getgrgid(entry.pw_gid).gr_name
    except KeyError:
        group = str(entry.pw_gid)
    return str(entry.pw_uid), str(entry.pw_gid), group


def extra_values(row: Mapping[str, Any], running: bool, cpus: int) -> dict[str, str]:
    """The values of :data:`EXTRA_CODES` and :data:`EXTRA_NAMES` of one job row
    (``running``: it holds nodes; ``cpus``: its CPUs, ``%C``)."""
    uid, gid, group = _owner(str(row.get("user", "")))
    nodes = list(row.get("nodes") or [])
    held = row.get("alloc") if nodes else None  # what its nodes gave it, else what it asks
    mem = sum(int(share[1]) for share in held.values()) if isinstance(held, dict) else 0
    if mem <= 0:
        per_cpu = int(row.get("mem_per_cpu_mb") or 0)
        mem = per_cpu * cpus if per_cpu > 0 else int(row.get("mem_per_node_mb") or 0) * len(nodes)
    eligible = max(int(row.get("begin_ms") or 0), int(row.get("submit_ms") or 0))
    tres = ""
    if running and nodes:
        tres = f"cpu={cpus}," + (f"mem={mem_size(mem)}," if mem else "") + \
            f"node={len(nodes)}"
    return {
        "user_id": uid, "group_id": gid, "group_name": group,
        "batch_host": nodes[0] if running and nodes else "n/a",
        "oversubscribe": "NO" if row.get("exclusive") else "OK",
        "min_tmp_disk": "0", "sockets": "*", "cores": "*", "threads": "*", "sct": "*:*:*",
        "contiguous": "0", "wckey": "(null)",
        "sq_cpus_per_task": str(int(row.get("cpus_per_task") or 1)),
        "sq_ntasks": str(int(row.get("ntasks") or 1)),
        "sq_eligible": slurm_time(eligible) if eligible else "N/A",
        "sq_restart_count": str(int(row.get("restart_count") or 0)),
        "sq_requeue": "0" if row.get("requeue") == "no" else "1",
        "tres_alloc": tres,
    }
