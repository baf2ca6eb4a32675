"""The Kafka key a request must carry: its subject (the intake refuses any other, ``KeyMismatch``).

One rule for the clients that send requests and the intake that checks them; standard library
only, so the CLI imports it for nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["request_key"]

_BY_NAME = frozenset({"DrainNode", "ResumeNode"})
_BY_NODE = frozenset({"RegisterNode"})
_BY_CONFIG = frozenset({"ApplyConfig"})
_BY_REQUEST = frozenset({"PlanStarts", "PlanPriorities", "PlanShares",  # reads of the shards,
                         "CreateReservation", "DeleteReservation"})  # reservations: own SLUID


def request_key(name: str, record: Mapping[str, Any]) -> str:
    """The key request ``name`` must carry: its subject's SLUID (a node's name for drain and
    resume). Reports from a node daemon about a run without a job are keyed by the node's
    SLUID."""
    if name in _BY_NAME:
        return str(record.get("name") or "")
    if name in _BY_NODE:
        return str(record.get("node_sluid") or "")
    if name in _BY_CONFIG:
        return str(record.get("config_sluid") or "")
    if name in _BY_REQUEST:
        return str(record.get("request_sluid") or "")
    return str(record.get("job_sluid") or record.get("node_sluid") or "")
