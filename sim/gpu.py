"""The Alibaba GPU cluster trace (ATC'23 "Beware of Fragmentation"), as a workload.

Decisions: nodes from ``openb_node_list_gpu_node.csv`` (CPUs = cpu_milli / 1000 rounded down,
memory in MiB as MB, GPUs and their model as the GPU type); each pod is a one-node job
submitted at its creation time that runs ``deletion_time - scheduled_time`` seconds (pods never
scheduled, or with no positive run time, are dropped and counted); CPUs are rounded up to whole
CPUs and a fractional GPU (``gpu_milli`` < 1000) takes a whole GPU, since Sluice allocates whole
devices; a ``gpu_spec`` naming one model becomes the job's GPU type, several models (``A|B``)
are treated as "any type"; the estimate is the run time (the trace has no user estimates).
"""

from __future__ import annotations

import csv
from pathlib import Path

from sim.workload import MachineNode, TraceJob, Workload

__all__ = ["load_gpu_trace"]

NODES_FILE = "openb_node_list_gpu_node.csv"
PODS_FILE = "openb_pod_list_default.csv"


def _int(text: str) -> int:
    try:
        return int(float(text))
    except ValueError:
        return -1


def load_gpu_trace(path: str | Path) -> Workload:
    """Load a pod list (a CSV file, or the trace directory for the default list)."""
    path = Path(path)
    pods = path / PODS_FILE if path.is_dir() else path
    nodes_file = pods.parent / NODES_FILE
    machine = []
    with nodes_file.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            machine.append(
                MachineNode(
                    name=row["sn"],
                    cpus=max(_int(row["cpu_milli"]) // 1000, 1),
                    mem_mb=max(_int(row["memory_mib"]), 0),
                    gpus=max(_int(row["gpu"]), 0),
                    gpu_type=row["model"],
                )
            )
    jobs, dropped = [], {"never scheduled": 0, "run time <= 0": 0}
    with pods.open(newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.DictReader(handle), start=1):
            created, scheduled = _int(row["creation_time"]), _int(row["scheduled_time"])
            deleted = _int(row["deletion_time"])
            if scheduled < 0:
                dropped["never scheduled"] += 1
                continue
            run = deleted - scheduled
            if run <= 0:
                dropped["run time <= 0"] += 1
                continue
            spec = row["gpu_spec"].strip()
            gpus = max(_int(row["num_gpu"]), 0)
            jobs.append(
                TraceJob(
                    number=number,
                    submit_s=max(created, 0),
                    run_s=run,
                    nodes=1,
                    estimate_s=run,
                    user=row["qos"] or "user",
                    cpus_per_node=max(-(-_int(row["cpu_milli"]) // 1000), 1),
                    mem_mb=max(_int(row["memory_mib"]), 0),
                    gpus=gpus,
                    gpu_type=spec if gpus and spec and "|" not in spec else "",
                )
            )
    jobs.sort(key=lambda j: (j.submit_s, j.number))
    return Workload(
        name=pods.name, machine=machine, jobs=jobs, dropped={k: v for k, v in dropped.items() if v}
    )
