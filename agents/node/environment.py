"""What a run sees: its environment variables and its output file names.

Slurm's names are kept where they exist (sbatch's and srun's "OUTPUT ENVIRONMENT VARIABLES"),
so batch scripts written for Slurm work unchanged. The batch step gets:

| variable | value |
|---|---|
| ``SLURM_JOB_ID``, ``SLURM_JOBID`` | the job's small integer id |
| ``SLURM_JOB_SLUID`` | the SLUID of this **run** (as Slurm 25.11) |
| ``SLUICE_JOB_SLUID`` | the job's SLUID, the same for every run |
| ``SLUICE_RUN_SLUID`` | this run's SLUID |
| ``SLUICE_PREVIOUS_RUN_SLUID`` | the previous run's SLUID ("" on the first run) |
| ``SLURM_RESTART_COUNT`` | how many times the job was requeued before this run |
| ``SLURM_JOB_NAME``, ``SLURM_JOB_USER``, ``SLURM_JOB_PARTITION`` | as submitted |
| ``SLURM_JOB_UID``, ``SLURM_JOB_GID`` | the user's uid and primary gid on this node |
| ``SLURM_JOB_ACCOUNT``, ``SLURM_JOB_QOS`` | the job's account and QOS (when it has one) |
| ``SLURM_JOB_NODELIST``, ``SLURM_NODELIST`` | the allocation as a hostlist (``n[01-04]``) |
| ``SLURM_JOB_NUM_NODES``, ``SLURM_NNODES`` | node count |
| ``SLURM_NTASKS``, ``SLURM_NPROCS`` | tasks: ``-n``, at least one per node |
| ``SLURM_TASKS_PER_NODE`` | tasks on each node, Slurm's form (``4,1``): laid out over its CPUs |
| ``SLURM_CPUS_PER_TASK`` | ``-c``, when above 1 or the job's environment has one |
| ``SLURM_CPUS_ON_NODE`` | CPUs allocated on this node |
| ``SLURM_JOB_CPUS_PER_NODE`` | CPUs allocated on each node, Slurm's form (``8(x2)``) |
| ``SLURM_MEM_PER_NODE`` | MB allocated on this node (when memory was asked for, not per CPU) |
| ``SLURM_MEM_PER_CPU`` | ``--mem-per-cpu`` (the CLI sets it in the job's environment, as sbatch) |
| ``SLURM_GPUS_ON_NODE``, ``SLURM_GPUS_PER_NODE`` | GPUs allocated on this node |
| ``SLURM_GPUS`` | GPUs of the whole allocation |
| ``SLURM_JOB_GPUS``, ``CUDA_VISIBLE_DEVICES`` | the GPUs this node gave the run (indices) |
| ``GPU_DEVICE_ORDINAL`` | the same (AMD's name) |
| ``SLURM_ARRAY_JOB_ID`` | array tasks only: the array's job id (its first task's) |
| ``SLURM_ARRAY_TASK_ID``, ``_COUNT``, ``_MIN``, ``_MAX`` | the task's id; the array's size |
| ``SLURM_ARRAY_TASK_STEP`` | the array's step (``1-9:3``: 3; ``1,5,7``: 1), as slurmctld's |
| ``SLURM_NODEID`` | this node's rank in the allocation (0 on the batch host) |
| ``SLURM_PROCID``, ``SLURM_LOCALID`` | 0 in the batch step |
| ``SLURMD_NODENAME``, ``SLURM_TOPOLOGY_ADDR`` | this node's name |
| ``SLURM_CLUSTER_NAME`` | the cluster (``SLUICE_CLUSTER``) |
| ``SLURM_SUBMIT_HOST`` | the host ``sluice submit`` ran on |
| ``SLURM_SUBMIT_DIR`` | the directory ``sluice submit`` ran in (else the working directory) |
| ``SLUICE_SEGMENTS`` | the segment layout: ``group:node,node;group:node,…`` in rank order |
| ``PATH`` | Slurm's command names first (``sluice slurm-path``), then the job's ``PATH`` |
| ``SLUICE_PYTHON`` | the node's interpreter, which those commands run |

A job step's tasks (``sluice run``/``srun``) get :func:`step_environment` on top: the step's
own ``SLURM_NTASKS``, ``SLURM_NNODES``, ``SLURM_NODELIST``, ``SLURM_TASKS_PER_NODE``,
``SLURM_STEP_ID``/``SLURM_STEPID``, ``SLURM_STEP_NODELIST``, ``SLURM_STEP_NUM_NODES``,
``SLURM_STEP_NUM_TASKS``, ``SLURM_STEP_TASKS_PER_NODE``, and per task ``SLURM_PROCID`` (global
rank), ``SLURM_LOCALID`` (rank on the node) and ``SLURM_NODEID`` (the node's rank in the step).

Under these lies the job's own environment (:func:`agents.node.job_env.open_job_env`): its
``--export`` values over a login's ``HOME``, ``USER``, ``LOGNAME``, ``SHELL`` and ``PATH``.
``SLURM_SUBMIT_DIR`` is among the ``--export`` values: ``sluice submit`` puts it there, as sbatch
does (``cli/export.py``); a job of an older client has none and gets its working directory.
"""

from __future__ import annotations

import pwd
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler.jobs.task_layout import layout_tasks
from scheduler.topology.hostlist import compress

__all__ = [
    "COMPAT_BIN",
    "NodeEnv",
    "block_distribution",
    "compress_hostlist",
    "default_output",
    "gpus_here",
    "output_path",
    "run_environment",
    "slurm_counts",
    "step_environment",
]

COMPAT_BIN = Path(__file__).resolve().parents[2] / "cli" / "slurm_compat" / "bin"
"""Slurm's command names (sbatch, srun, …) mapped onto sluice: first on every job's PATH."""

compress_hostlist = compress
"""A Slurm hostlist expression for node names (``n01,n02,n03`` → ``n[01-03]``)."""


@dataclass(frozen=True, slots=True)
class NodeEnv:
    """What the node adds to every run's environment: the cluster's name, its GPU count."""

    cluster: str = ""
    gpus: int = 0


def gpus_here(launch: Mapping[str, Any], node_name: str) -> int:
    """How many GPUs the run was allocated on ``node_name``."""
    nodes, gpus = list(launch.get("nodes") or []), list(launch.get("alloc_gpus") or [])
    if node_name not in nodes or len(gpus) != len(nodes):
        return 0
    return int(gpus[nodes.index(node_name)])


def slurm_counts(values: Sequence[int]) -> str:
    """Slurm's compressed per-node list: ``[2, 2, 1]`` → ``2(x2),1``."""
    parts: list[str] = []
    index = 0
    while index < len(values):
        run = 1
        while index + run < len(values) and values[index + run] == values[index]:
            run += 1
        parts.append(f"{values[index]}(x{run})" if run > 1 else str(values[index]))
        index += run
    return ",".join(parts)


def block_distribution(ntasks: int, nnodes: int) -> list[int]:
    """Tasks on each node, as Slurm's block distribution: as even as can be, the first nodes
    taking one more; at least one task per node."""
    nnodes = max(nnodes, 1)
    ntasks = max(ntasks, nnodes)
    base, extra = divmod(ntasks, nnodes)
    return [base + (1 if i < extra else 0) for i in range(nnodes)]


def _rank(nodes: Sequence[str], node_name: str) -> int:
    return nodes.index(node_name) if node_name in nodes else 0


def _resources(launch: Mapping[str, Any], node_name: str, gpu_ids: Sequence[int],
               job_env: Mapping[str, str]) -> dict[str, str]:
    """The allocation's variables. ``SLURM_CPUS_PER_TASK`` is sbatch's, set when ``-c`` was
    given; the launch cannot tell ``-c 1`` from no ``-c``, so it is set above one CPU, and
    when the job's environment already has one (slurmd overwrites it then): a job submitted
    from a ``-c 4`` job with no ``-c`` of its own sees 1, not 4."""
    nodes: list[str] = list(launch["nodes"])
    rank = _rank(nodes, node_name)
    ntasks = max(int(launch.get("ntasks") or 1), len(nodes))
    cpus = list(launch.get("alloc_cpus") or [])
    mem = list(launch.get("alloc_mem_mb") or [])
    gpus = list(launch.get("alloc_gpus") or [])
    per_task = int(launch.get("cpus_per_task") or 1)
    tasks = (layout_tasks(ntasks, cpus, per_task) if len(cpus) == len(nodes) and all(cpus)
             else block_distribution(ntasks, len(nodes)))
    env = {
        "SLURM_NTASKS": str(ntasks), "SLURM_NPROCS": str(ntasks),
        "SLURM_TASKS_PER_NODE": slurm_counts(tasks),
    }
    if int(launch.get("cpus_per_task") or 1) > 1 or "SLURM_CPUS_PER_TASK" in job_env:
        env["SLURM_CPUS_PER_TASK"] = str(launch.get("cpus_per_task") or 1)
    if len(cpus) == len(nodes) and cpus:
        env["SLURM_CPUS_ON_NODE"] = str(cpus[rank])
        env["SLURM_JOB_CPUS_PER_NODE"] = slurm_counts(cpus)
    if len(mem) == len(nodes) and mem and mem[rank] > 0 and "SLURM_MEM_PER_CPU" not in job_env:
        env["SLURM_MEM_PER_NODE"] = str(mem[rank])  # asked per CPU: sbatch's SLURM_MEM_PER_CPU
    if len(gpus) == len(nodes) and any(gpus):
        env["SLURM_GPUS_ON_NODE"] = str(gpus[rank])
        env["SLURM_GPUS_PER_NODE"] = str(gpus[rank])
        env["SLURM_GPUS"] = str(sum(gpus))
    if gpu_ids:
        ids = ",".join(str(i) for i in gpu_ids)
        env.update(SLURM_JOB_GPUS=ids, CUDA_VISIBLE_DEVICES=ids, GPU_DEVICE_ORDINAL=ids)
    if int(launch.get("array_task_id", -1)) >= 0:
        env.update({
            "SLURM_ARRAY_JOB_ID": str(launch.get("array_job_id") or launch["job_id"]),
            "SLURM_ARRAY_TASK_ID": str(launch["array_task_id"]),
            "SLURM_ARRAY_TASK_COUNT": str(launch.get("array_task_count") or 1),
            "SLURM_ARRAY_TASK_MIN": str(launch.get("array_task_min", launch["array_task_id"])),
            "SLURM_ARRAY_TASK_MAX": str(launch.get("array_task_max", launch["array_task_id"])),
        })
        if int(launch.get("array_task_step") or 0) > 0:  # 0: a launch of an older shard
            env["SLURM_ARRAY_TASK_STEP"] = str(launch["array_task_step"])
    return env


def compat_path(path: str) -> str:
    """``path`` with Slurm's command names first (once)."""
    parts = [p for p in path.split(":") if p and p != str(COMPAT_BIN)]
    return ":".join([str(COMPAT_BIN), *parts])


def run_environment(launch: Mapping[str, Any], node_name: str, gpu_ids: Sequence[int] = (),
                    cluster: str = "", base_path: str = "") -> dict[str, str]:
    """The variables a run gets, from its LaunchRun record (the job's own env comes first).

    ``gpu_ids`` are the GPUs this node gave the run, ``cluster`` the cluster's name and
    ``base_path`` the ``PATH`` the run would have (Slurm's command names go first).
    ``SLURM_SUBMIT_DIR`` is the job's own (the directory it was submitted from), else its
    working directory."""
    nodes: list[str] = list(launch["nodes"])
    segments = ";".join(
        f"{seg['group']}:{','.join(seg['nodes'])}" for seg in launch.get("segments") or []
    )
    job_env: dict[str, str] = dict(launch.get("env") or {})
    resources = _resources(launch, node_name, gpu_ids, job_env)
    env = {k: v for k, v in job_env.items() if k not in _ARRAY_NAMES or k in resources}
    env.update(
        {
            "SLURM_JOB_ID": str(launch["job_id"]),
            "SLURM_JOBID": str(launch["job_id"]),
            "SLURM_JOB_SLUID": launch["run_sluid"],
            "SLUICE_JOB_SLUID": launch["job_sluid"],
            "SLUICE_RUN_SLUID": launch["run_sluid"],
            "SLUICE_PREVIOUS_RUN_SLUID": launch.get("previous_run_sluid") or "",
            "SLURM_RESTART_COUNT": str(launch.get("restart_count", 0)),
            "SLURM_JOB_NAME": launch.get("name") or "",
            "SLURM_JOB_USER": launch.get("user") or "",
            "SLURM_JOB_PARTITION": launch.get("partition") or "",
            "SLURM_JOB_NODELIST": compress_hostlist(nodes),
            "SLURM_NODELIST": compress_hostlist(nodes),
            "SLURM_JOB_NUM_NODES": str(len(nodes)),
            "SLURM_NNODES": str(len(nodes)),
            "SLURM_NODEID": str(_rank(nodes, node_name)),
            "SLURM_PROCID": "0",
            "SLURM_LOCALID": "0",
            "SLURMD_NODENAME": node_name,
            "SLURM_TOPOLOGY_ADDR": node_name,
            "SLUICE_SEGMENTS": segments,
            "SLURM_SUBMIT_DIR": job_env.get("SLURM_SUBMIT_DIR") or launch.get("workdir") or "",
            "SLURM_SUBMIT_HOST": launch.get("submit_host") or "",
            "SLURM_CLUSTER_NAME": cluster,
            "PATH": compat_path(job_env.get("PATH") or base_path or _DEFAULT_PATH),
            "SLUICE_PYTHON": sys.executable,
            **resources,
        }
    )
    env.update(_ids(launch.get("user") or ""))
    for name, field in (("SLURM_JOB_ACCOUNT", "account"), ("SLURM_JOB_QOS", "qos")):
        value = launch.get(field) or ""
        if value:
            env[name] = value
        else:  # as slurmd: none, not one the submitter's environment carried from its job
            env.pop(name, None)
    return env


def _ids(user: str) -> dict[str, str]:
    """``SLURM_JOB_UID`` and ``SLURM_JOB_GID`` (the user's primary group), as slurmd sets
    them; none for a user this node does not know (the run is refused then anyway)."""
    try:
        entry = pwd.getpwnam(user)
    except (KeyError, ValueError):
        return {}
    return {"SLURM_JOB_UID": str(entry.pw_uid), "SLURM_JOB_GID": str(entry.pw_gid)}


def step_environment(step: Mapping[str, Any], node_name: str, local_id: int,
                     ) -> dict[str, str]:
    """The variables one task of a job step gets on top of its run's (LaunchStep record)."""
    nodes: list[str] = list(step["nodes"])
    counts = [int(c) for c in step["tasks_per_node"]]
    rank = _rank(nodes, node_name)
    first = sum(counts[:rank])
    ntasks, nodelist, per_node = str(sum(counts)), compress_hostlist(nodes), slurm_counts(counts)
    return {
        "SLURM_STEP_ID": str(step["step_id"]), "SLURM_STEPID": str(step["step_id"]),
        "SLURM_STEP_NODELIST": nodelist, "SLURM_STEP_NUM_NODES": str(len(nodes)),
        "SLURM_STEP_NUM_TASKS": ntasks, "SLURM_STEP_TASKS_PER_NODE": per_node,
        "SLURM_NTASKS": ntasks, "SLURM_NPROCS": ntasks, "SLURM_NNODES": str(len(nodes)),
        "SLURM_NODELIST": nodelist, "SLURM_TASKS_PER_NODE": per_node,
        "SLURM_CPUS_PER_TASK": str(step.get("cpus_per_task") or 1),
        "SLURM_NODEID": str(rank), "SLURM_PROCID": str(first + local_id),
        "SLURM_LOCALID": str(local_id),
    }


def default_output(launch: Mapping[str, Any]) -> str:
    """The output pattern of a job without ``-o``: ``sluice-%j.out``, and ``sluice-%A_%a.out``
    for an array task (Slurm's ``slurm-%j.out`` and ``slurm-%A_%a.out``, under Sluice's name)."""
    return "sluice-%A_%a.out" if int(launch.get("array_task_id", -1)) >= 0 else "sluice-%j.out"


def output_path(pattern: str, launch: Mapping[str, Any], node_name: str) -> str:
    """Expand an ``-o``/``-e`` pattern of the batch step as Slurm does (sbatch's "filename
    pattern"): ``%A`` the array's job id (the job's own when it is no array task), ``%a`` the
    array task id (4294967294 when none, as Slurm), ``%b`` that modulo 10, ``%j`` the job id,
    ``%J`` job id and step (``ID.batch``), ``%s`` the step (``batch``), ``%n`` the node's index
    and ``%t`` the task's (0: the batch step runs on the first node as task 0), ``%N`` the
    node, ``%u`` the user, ``%x`` the job name, ``%%`` a percent sign; a number after ``%``
    zero-pads a number to that width (at most 10). Sluice adds ``%S``, the run SLUID. A
    pattern with a backslash is taken as it is, the backslashes removed, as Slurm does. Any
    other ``%`` sequence stays as written."""
    if "\\" in pattern:
        return pattern.replace("\\", "")
    task = int(launch.get("array_task_id", -1))
    job_id = int(launch["job_id"])
    numbers = {
        "A": int(launch.get("array_job_id") or 0) if task >= 0 else job_id,
        "a": task if task >= 0 else _NO_TASK, "b": (task if task >= 0 else _NO_TASK) % 10,
        "j": job_id, "n": 0, "t": 0,
    }
    texts = {"J": f"{job_id}.batch", "s": "batch", "N": node_name,
             "S": str(launch["run_sluid"]), "x": str(launch.get("name") or ""),
             "u": str(launch.get("user") or "")}

    def expand(match: re.Match[str]) -> str:
        width, symbol = match.group(1), match.group(2)
        if symbol is None:
            return "%"
        if symbol in numbers:
            return f"{numbers[symbol]:0{_width(width)}d}"
        if symbol == "J" and width:
            return f"{job_id:0{_width(width)}d}.batch"
        return texts[symbol]

    return _PATTERN.sub(expand, pattern)


def _width(digits: str) -> int:
    """A pattern's zero padding: at most :data:`_MAX_WIDTH` (``int`` of a user's 5,000 digits
    is refused)."""
    return min(int(digits), _MAX_WIDTH) if 0 < len(digits) <= 3 else (_MAX_WIDTH if digits else 0)


_ARRAY_NAMES = frozenset(f"SLURM_ARRAY_{name}" for name in (
    "JOB_ID", "TASK_ID", "TASK_COUNT", "TASK_MIN", "TASK_MAX", "TASK_STEP"))
"""The array variables: a run has only those the node sets, never ones the submitter's
environment carried from the array task it was submitted in."""
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
"""A run's ``PATH`` when neither the job nor the caller gives one."""
_PATTERN = re.compile(r"%%|%(\d*)([AabJjNnstuxS])", re.ASCII)
_NO_TASK = 4294967294
"""What Slurm writes for ``%a`` outside an array (its ``NO_VAL``)."""
_MAX_WIDTH = 10
"""The widest zero padding Slurm makes."""
