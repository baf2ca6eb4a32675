"""How the views read facts of release v1, which do not say what the core decided.

Since release v2 every fact that follows a decision carries it (``docs/records.md``, "What the
facts decide"): the views show those fields and apply no rule of the core. A v1 ledger (or a v1
record decoded with today's schemas, the new fields at their defaults) lacks them; the views
then fall back to what the facts *do* say, never to the cluster configuration:

- ``JobQueued`` without ``partition``/``account``/``qos``/``time_limit_s``/``requeue``: the
  spec's values as written; a job without a partition is shown in the default partition the
  last ``ConfigApplied`` announced (``main`` before any), and in its run's partition once it
  starts (``JobStarted`` always said it);
- ``JobStarted`` without the allocation: each node holds the spec as written (its CPUs per
  task times its tasks spread over the node count, its memory and GPUs per node; the whole
  node when exclusive) — :func:`spec_alloc`;
- ``JobEnded`` without ``job_state``: the run's end is taken as the job's end, except an end
  ``REQUEUED`` (the state itself says the job is requeued). A requeue the views could not see
  is shown as soon as a later fact tells it: ``JobExpediting``, an ``ok``
  ``NodeEpilogCompleted`` (the core reports only awaited epilogs), or ``JobRequeued``;
- ``JobRequeued`` without ``pending_reason``: ``JobHeldUser`` when held, ``BeginTime`` when the
  begin time is ahead, else ``None`` (:func:`requeued_pending_reason`);
- ``ConfigApplied`` without ``blocks``: nodes get their block from a ``block=<name>`` feature
  only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["requeued_pending_reason", "spec_alloc"]

Row = Mapping[str, Any]


def spec_alloc(job: Row, node: Row | None) -> list[int]:
    """``[cpus, mem_mb, gpus]`` a run recorded without its allocation holds on ``node``."""
    if job.get("exclusive") and node is not None:
        return [int(node.get("cpus", 0)), int(node.get("mem_mb", 0)), int(node.get("gpus", 0))]
    cpus = int(job.get("cpus_per_node", 0))
    if cpus <= 0:
        nodes = max(int(job.get("nodes_min", 1)), 1)
        tasks_per_node = max(1, -(-max(int(job.get("ntasks", 1)), 1) // nodes))
        cpus = tasks_per_node * max(int(job.get("cpus_per_task", 1)), 1)
    return [cpus, int(job.get("mem_per_node_mb", 0)), int(job.get("gpus_per_node", 0))]


def requeued_pending_reason(record: Row) -> str:
    """The pending reason after a v1 ``JobRequeued``."""
    if record.get("held"):
        return "JobHeldUser"
    if int(record.get("begin_time_ms", 0)) > int(record.get("time_ms", 0)):
        return "BeginTime"
    return "None"
