"""A workload: the machine and the jobs a trace describes, independent of the trace format."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MachineNode", "TraceJob", "Workload"]


@dataclass(frozen=True, slots=True)
class MachineNode:
    """One simulated node."""

    name: str
    cpus: int
    mem_mb: int = 0
    gpus: int = 0
    gpu_type: str = ""


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace: when it arrives, what it asks for, how long it really runs."""

    number: int
    submit_s: int
    run_s: int
    nodes: int
    estimate_s: int
    user: str = "user"
    cpus_per_node: int = 1
    mem_mb: int = 0
    gpus: int = 0
    gpu_type: str = ""


@dataclass(slots=True)
class Workload:
    """The machine, the jobs (by submit time) and what was dropped while reading, with why."""

    name: str
    machine: list[MachineNode]
    jobs: list[TraceJob]
    dropped: dict[str, int] = field(default_factory=dict)
    start_unix_s: int = 0

    @property
    def dropped_total(self) -> int:
        """How many trace records were not simulated."""
        return sum(self.dropped.values())
