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
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["compress_hostlist", "output_path", "run_environment"]

_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def compress_hostlist(names: Sequence[str]) -> str:
    """A Slurm hostlist expression for ``names`` (``n01,n02,n03,x`` → ``n[01-03],x``)."""
    groups: dict[tuple[str, int], list[int]] = {}
    order: list[tuple[str, int] | str] = []
    for name in names:
        match = _NUMBERED.match(name)
        if match is None:
            order.append(name)
            continue
        key = (match.group(1), len(match.group(2)))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(match.group(2)))
    parts = []
    for item in order:
        if isinstance(item, str):
            parts.append(item)
            continue
        prefix, width = item
        numbers = sorted(set(groups[item]))
        ranges, start, prev = [], numbers[0], numbers[0]
        for number in [*numbers[1:], None]:
            if number is not None and number == prev + 1:
                prev = number
                continue
            ranges.append(f"{start:0{width}d}" if start == prev else
                          f"{start:0{width}d}-{prev:0{width}d}")
            if number is not None:
                start = prev = number
        body = ranges[0] if len(numbers) == 1 else f"[{','.join(ranges)}]"
        parts.append(f"{prefix}{body}")
    return ",".join(parts)


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
