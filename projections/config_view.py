"""What the views need from a configuration in force: the default partition, the requeue rules
(``JobRequeue``, ``RequeueExit``, ``RequeueExitHold``) and node blocks.

Both read the text of a ``ConfigApplied`` fact with the core's own parsers, so the views agree
with the scheduler. A text the parsers refuse leaves the previous answer in place (the shard
only records configurations it validated, so this happens only across versions).
"""

from __future__ import annotations

import logging
from typing import Any

from projections.requeue_rules import RequeueRules

__all__ = ["blocks_of", "default_partition_of", "requeue_rules_of"]

log = logging.getLogger(__name__)


def default_partition_of(text: str, fallback: str) -> str:
    """The name of the default partition of a cluster configuration."""
    try:
        from scheduler.config import parse_config  # noqa: PLC0415 - the core is optional here

        config = parse_config(text, "ConfigApplied")
    except Exception as exc:  # a view must never stop on a config it cannot read
        log.warning("views: cluster configuration not understood: %s", exc)
        return fallback
    part = config.partition("")
    return part.name if part is not None else fallback


def requeue_rules_of(text: str, fallback: RequeueRules) -> RequeueRules:
    """The cluster's ``JobRequeue`` (the policy of jobs that choose none), ``RequeueExit`` and
    ``RequeueExitHold``."""
    try:
        from scheduler.config import parse_config  # noqa: PLC0415 - the core is optional here

        requeue = parse_config(text, "ConfigApplied").requeue
    except Exception:  # a view must never stop on a config it cannot read
        return fallback
    return RequeueRules(job_requeue=bool(requeue.job_requeue),
                        requeue_exit=frozenset(requeue.requeue_exit),
                        requeue_exit_hold=frozenset(requeue.requeue_exit_hold))


def blocks_of(text: str) -> dict[str, str]:
    """Node name → base block, from the first block topology of a topology.yaml or .conf text.

    The cluster-default topology comes first when it is a block topology.
    """
    topologies = _parse_topology(text)
    if topologies is None:
        return {}
    for topology in topologies:
        blocks = getattr(topology.config, "blocks", None)
        if topology.kind == "block" and blocks is not None:
            return {node: block.name for block in blocks for node in block.nodes}
    return {}


def _parse_topology(text: str) -> tuple[Any, ...] | None:
    try:
        from scheduler.topology.config.topology_conf import (  # noqa: PLC0415
            parse_topology_conf,
        )
        from scheduler.topology.config.topology_yaml import (  # noqa: PLC0415
            parse_topology_yaml,
        )
    except ImportError:
        return None
    for parse in (parse_topology_yaml, parse_topology_conf):
        try:
            return tuple(parse(text).topologies)
        except Exception:  # try the other format
            continue
    log.warning("views: topology configuration not understood")
    return None
