"""What a run sees: its environment variables and its output file names.

Slurm's names are kept where they exist, so batch scripts written for Slurm work unchanged:

| variable | value |
|---|---|
| ``SLURM_JOB_ID`` | the job's small integer id |
| ``SLURM_JOB_SLUID`` | the SLUID of this **run** (as Slurm 25.11) |
| ``SLUICE_JOB_SLUID`` | the job's SLUID, the same for every run |
| ``SLUICE_RUN_SLUID`` | this run's SLUID |
| ``SLUICE_PREVIOUS_RUN_SLUID`` | the previous run's SLUID ("" on the first run) |
| ``SLURM_RESTART_COUNT`` | how many times the job was requeued before this run |
| ``SLURM_JOB_NAME``, ``SLURM_JOB_USER``, ``SLURM_JOB_PARTITION`` | as submitted |
| ``SLURM_JOB_NODELIST`` | the allocation as a hostlist expression (``n[01-04]``) |
| ``SLURM_JOB_NUM_NODES``, ``SLURM_NNODES`` | node count |
| ``SLURM_NODEID`` | this node's rank in the allocation (0 on the batch host) |
| ``SLURMD_NODENAME`` | this node's name |
| ``SLUICE_SEGMENTS`` | the segment layout: ``group:node,node;group:node,…`` in rank order |
| ``SLURM_SUBMIT_DIR`` | the working directory |
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from scheduler.topology.hostlist import compress

__all__ = ["compress_hostlist", "output_path", "run_environment"]

compress_hostlist = compress
"""A Slurm hostlist expression for node names (``n01,n02,n03`` → ``n[01-03]``)."""


def run_environment(launch: Mapping[str, Any], node_name: str) -> dict[str, str]:
    """The variables a run gets, from its LaunchRun record (the job's own env comes first)."""
    nodes: list[str] = list(launch["nodes"])
    segments = ";".join(
        f"{seg['group']}:{','.join(seg['nodes'])}" for seg in launch.get("segments") or []
    )
    env = dict(launch.get("env") or {})
    env.update(
        {
            "SLURM_JOB_ID": str(launch["job_id"]),
            "SLURM_JOB_SLUID": launch["run_sluid"],
            "SLUICE_JOB_SLUID": launch["job_sluid"],
            "SLUICE_RUN_SLUID": launch["run_sluid"],
            "SLUICE_PREVIOUS_RUN_SLUID": launch.get("previous_run_sluid") or "",
            "SLURM_RESTART_COUNT": str(launch.get("restart_count", 0)),
            "SLURM_JOB_NAME": launch.get("name") or "",
            "SLURM_JOB_USER": launch.get("user") or "",
            "SLURM_JOB_PARTITION": launch.get("partition") or "",
            "SLURM_JOB_NODELIST": compress_hostlist(nodes),
            "SLURM_JOB_NUM_NODES": str(len(nodes)),
            "SLURM_NNODES": str(len(nodes)),
            "SLURM_NODEID": str(nodes.index(node_name) if node_name in nodes else 0),
            "SLURMD_NODENAME": node_name,
            "SLUICE_SEGMENTS": segments,
            "SLURM_SUBMIT_DIR": launch.get("workdir") or "",
        }
    )
    return env


def output_path(pattern: str, launch: Mapping[str, Any], node_name: str) -> str:
    """Expand an ``-o``/``-e`` pattern: ``%j`` job id, ``%S`` run SLUID, ``%N`` node,
    ``%x`` job name, ``%u`` user, ``%%`` a percent sign."""
    values = {
        "j": str(launch["job_id"]),
        "S": launch["run_sluid"],
        "N": node_name,
        "x": launch.get("name") or "",
        "u": launch.get("user") or "",
        "%": "%",
    }
    return re.sub(r"%([jSNxu%])", lambda m: values[m.group(1)], pattern)
