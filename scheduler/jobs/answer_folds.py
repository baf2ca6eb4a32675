"""The folds of the shards' answers to reads (called by :func:`scheduler.evolve` only).

``squeue --start``, ``sprio`` and ``sshare`` are answered by one fact per shard
(``StartsPlanned``, ``PrioritiesComputed``, ``SharesComputed``) that changes no job or node: its
fold records the time and event SLUID of the shard's last full answer, which the next 10 s of
requests reuse (:mod:`scheduler.jobs.starts`, :mod:`~scheduler.jobs.priorities_plan`,
:mod:`~scheduler.jobs.shares_plan`). A scheduling pass may be carried on after any of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.jobs.priorities_plan import priorities_computed
from scheduler.jobs.shares_plan import shares_computed
from scheduler.jobs.starts import starts_planned
from scheduler.records import PrioritiesComputed, SharesComputed, StartsPlanned
from scheduler.shard.state import ShardState

__all__ = ["ANSWER_FOLDS"]

ANSWER_FOLDS: dict[type, Callable[[ShardState, Any], None]] = {
    StartsPlanned: starts_planned,
    PrioritiesComputed: priorities_computed,
    SharesComputed: shares_computed,
}
