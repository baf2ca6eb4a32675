"""A reservation as the shard keeps it: a frozen copy of its last ``ReservationSet``."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.records import ReservationSet

__all__ = ["FLAGS", "FLAG_ALIASES", "IGNORE_JOBS", "MAINT", "NO_HOLD_JOBS", "Reservation",
           "from_fact"]

MAINT = "MAINT"
IGNORE_JOBS = "IGNORE_JOBS"
NO_HOLD_JOBS = "NO_HOLD_JOBS_AFTER_END"
"""When it is deleted or ends, its pending jobs lose it and may run anywhere, instead of being
held (``RESV_DEL_HOLD``); Slurm's name as ``scontrol show reservation`` prints it."""
FLAGS = (MAINT, IGNORE_JOBS, NO_HOLD_JOBS)
"""The flags Sluice acts on (Slurm has more: docs/slurm-commands.md says which are not built)."""
FLAG_ALIASES = {"NO_HOLD_JOBS_AFTER": NO_HOLD_JOBS}
"""Other spellings scontrol takes (``scontrol`` man page: ``NO_HOLD_JOBS_AFTER``)."""


@dataclass(frozen=True, slots=True)
class Reservation:
    """Nodes set aside from ``start_ms`` (included) to ``end_ms`` (excluded)."""

    name: str
    start_ms: int
    end_ms: int
    nodes: tuple[str, ...]
    users: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()

    def active(self, now_ms: int) -> bool:
        """True inside the window."""
        return self.start_ms <= now_ms < self.end_ms

    def overlaps(self, start_ms: int, end_ms: int) -> bool:
        """True when [start_ms, end_ms) meets the window."""
        return self.start_ms < end_ms and start_ms < self.end_ms

    @property
    def maint(self) -> bool:
        """Flags=MAINT: its nodes show MAINT during the window, and it may overlap others."""
        return MAINT in self.flags

    @property
    def holds_jobs_after(self) -> bool:
        """Whether its pending jobs are held once it is gone (not ``NO_HOLD_JOBS_AFTER_END``)."""
        return NO_HOLD_JOBS not in self.flags

    def admits(self, user: str, account: str) -> bool:
        """May a job of ``user`` under ``account`` run in it? root always; else the user must
        be listed when Users= is set and the account when Accounts= is (both when both are,
        as Slurm)."""
        if user == "root":
            return True
        if not self.users and not self.accounts:
            return False
        return (not self.users or user in self.users) and (
            not self.accounts or account in self.accounts)


def from_fact(fact: ReservationSet) -> Reservation:
    """The reservation a ``ReservationSet`` describes."""
    return Reservation(
        name=fact.name, start_ms=fact.start_ms, end_ms=fact.end_ms, nodes=tuple(fact.nodes),
        users=tuple(fact.users), accounts=tuple(fact.accounts), flags=tuple(fact.flags),
    )
