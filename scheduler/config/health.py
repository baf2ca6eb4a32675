"""Reading the node health keys of a cluster file into a :class:`NodeHealthConfig`.

- ``ReturnToService`` (Slurm's key) — 0: a DOWN node stays DOWN until an operator resumes it;
  1 (Sluice's default; Slurm's default is 0): a node DOWN for not responding returns to service
  when it answers again (heartbeats resume, or it registers) with a valid configuration; 2: a
  DOWN node returns whatever the reason, unless an operator set it DOWN;
- ``NodeFailureGuardShare`` (Sluice) — a number from 0 to 1, default 0.5: when more than this
  share of the nodes the health agent watches, and at least 2, are silent at once, they are
  suspected of being cut off (``NodeSuspected``) rather than failed; 1 turns the guard off;
- ``MissingRunGrace`` (Sluice) — whole seconds, at least 1, default 30: how long a run the shard
  holds on a node may stay missing from the node's heartbeats (or listed there as exited with
  no exit report) before the shard ends it (``scheduler.nodes.missing_runs``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from scheduler.config.model import NodeHealthConfig
from scheduler.config.values import as_factor, as_int

__all__ = ["build_health"]

T = TypeVar("T")


class _Keys(Protocol):
    def get(self, key: str, convert: Callable[[Any, str], T], default: T) -> T: ...


def _as_return_to_service(value: Any, key: str) -> int:
    number = as_int(0)(value, key)
    if number > 2:
        raise ValueError(f"{key} must be 0, 1 or 2, not {number}")
    return number


def _as_share(value: Any, key: str) -> float:
    share = as_factor(value, key)
    if share > 1:
        raise ValueError(f"{key} must be a share from 0 to 1, not {share:g}")
    return share


def build_health(top: _Keys) -> NodeHealthConfig:
    """``ReturnToService``, ``NodeFailureGuardShare`` and ``MissingRunGrace`` from the top
    level."""
    defaults = NodeHealthConfig()
    return NodeHealthConfig(
        return_to_service=top.get(
            "ReturnToService", _as_return_to_service, defaults.return_to_service
        ),
        failure_guard_share=top.get(
            "NodeFailureGuardShare", _as_share, defaults.failure_guard_share
        ),
        missing_run_grace_s=top.get(
            "MissingRunGrace", as_int(1), defaults.missing_run_grace_s
        ),
    )
