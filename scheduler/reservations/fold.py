"""The folds of the reservations' facts (called by :func:`scheduler.evolve` only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler.records import ReservationDeleted, ReservationSet
from scheduler.reservations.model import from_fact
from scheduler.shard.state import ShardState

__all__ = ["RESERVATION_FOLDS"]


def _reservation_set(state: ShardState, fact: ReservationSet) -> None:
    state.meta.reservations[fact.name] = from_fact(fact)


def _reservation_deleted(state: ShardState, fact: ReservationDeleted) -> None:
    state.meta.reservations.pop(fact.name, None)


RESERVATION_FOLDS: dict[type, Callable[[ShardState, Any], None]] = {
    ReservationSet: _reservation_set,
    ReservationDeleted: _reservation_deleted,
}
