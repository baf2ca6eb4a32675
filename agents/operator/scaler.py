"""The operator's own scaler: NodeSet replicas from the pending demand (pure).

Demand is what the projections expose: the nodes the pending jobs of the NodeSet's partition
need (``nodes_min`` summed over ``GET /v1/jobs?state=PENDING``), on top of the nodes busy now.
Replicas stay within ``minReplicas``..``maxReplicas``; a scale-down removes only nodes that
are idle, and the loop drains them first (the StatefulSet removes the highest ordinals).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["desired_replicas"]


def desired_replicas(nodeset: dict[str, Any], current: int, pending: Iterable[dict[str, Any]],
                     busy: int) -> int:
    """Replicas for one NodeSet: busy nodes + pending jobs' nodes, clamped to min/max."""
    partition = nodeset.get("partition", "")
    wanted = busy + sum(int(job.get("nodes_min") or 1) for job in pending
                        if not partition or job.get("partition") == partition)
    low = int(nodeset.get("minReplicas", nodeset.get("replicas", 0)))
    high = int(nodeset.get("maxReplicas", max(low, current)))
    return max(low, min(high, wanted))
