"""The core's range check of a job spec: :func:`schemas.ranges.spec_range_problem` (the limits
live with the wire contract so clients can check without the core) with its reasons as the
core's named :class:`~scheduler.shard.reasons.Rejection` constants."""

from __future__ import annotations

from scheduler.records import JobSpec
from scheduler.shard.reasons import Rejection, RejectionReason
from schemas.ranges import (
    MAX_CPUS_PER_NODE,
    MAX_GPUS_PER_NODE,
    MAX_LIST_ITEMS,
    MAX_MEM_MB,
    MAX_NODES,
    MAX_SHORT_TEXT,
    MAX_TIME_LIMIT_S,
    MAX_TIME_MS,
)
from schemas.ranges import spec_range_problem as _problem

__all__ = ["spec_range_problem"]

_REASONS = {
    r.name: r
    for r in (RejectionReason.VALUE_OUT_OF_RANGE, RejectionReason.FIELD_TOO_LONG,
              RejectionReason.INVALID_TASKS)
}


def spec_range_problem(spec: JobSpec) -> tuple[Rejection, str] | None:
    """The first range ``spec`` breaks, as a named rejection and a detail, or None."""
    if _well_inside(spec):
        return None
    problem = _problem(spec)
    return None if problem is None else (_REASONS[problem[0]], problem[1])


def _well_inside(s: JobSpec) -> bool:
    """A quick sufficient test (every submission of a simulation takes it): each number inside
    its range, the short texts and the command short in sum; False means "check in full"."""
    return (
        0 < s.nodes_min <= MAX_NODES and 0 <= s.nodes_max <= MAX_NODES
        and s.ntasks > 0 and s.cpus_per_task > 0
        and s.ntasks * s.cpus_per_task <= MAX_CPUS_PER_NODE
        and 0 <= s.gpus_per_node <= MAX_GPUS_PER_NODE and 0 <= s.mem_per_node_mb <= MAX_MEM_MB
        and 0 <= s.time_limit_s <= MAX_TIME_LIMIT_S and 0 <= s.begin_time_ms <= MAX_TIME_MS
        and not (s.segment or s.switches or s.switches_max_wait_s or s.env or s.nice)
        and not (s.gpus or s.ntasks_per_node or s.mem_per_cpu_mb or s.constraint or s.nodelist
                 or s.exclude or s.signal or s.mail_type or s.mail_user)
        and len(s.command) <= MAX_LIST_ITEMS
        and len(s.name) + len(s.user) + len(s.account) + len(s.partition) + len(s.qos)
        + len(s.gpu_type) + len(s.array) + len(s.workdir) + len(s.output) + len(s.error)
        + len(s.dependency) + len(s.licenses) + len(s.resources) + len(s.comment)
        + sum(map(len, s.command)) <= MAX_SHORT_TEXT
    )
