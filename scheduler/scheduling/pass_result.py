"""What one scheduling pass returns (:func:`scheduler.schedule.schedule_with_plan`)."""

from __future__ import annotations

from scheduler.records import Fact
from scheduler.scheduling.backfill import Reservation

__all__ = ["PassResult"]


class PassResult:
    """A pass's facts plus what it planned, for the simulator and tests."""

    def __init__(self, facts: list[Fact], reservations: dict[str, Reservation],
                 backfilled: list[tuple[str, int]]) -> None:
        self.facts = facts
        self.reservations = reservations  # job SLUID → its reservation
        # (job SLUID, how many reservations existed when backfill started it), in order;
        # ``reservations`` keeps creation order, so those are its first entries
        self.backfilled = backfilled

    @property
    def reserved_starts(self) -> dict[str, int]:
        """Job SLUID → reserved start (ms)."""
        return {job: r.start_ms for job, r in self.reservations.items()}
