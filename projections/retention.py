"""Which job rows the views hold in memory: the active ones and a recent window of ended ones.

Like slurmctld, which forgets an ended job ``MinJobAge`` after its end (squeue no longer shows
it, sacct still does), the views drop an ended job's row from memory once it ended more than
``retention_ms`` ago, measured against the views' own clock (the time of the newest fact
folded), never the wall clock, so a rebuild drops the same rows at the same facts. The row
stays in the store; an :class:`Archive` (the service's :class:`projections.archive.StoreArchive`)
reads it back when a query or a late fact (a requeue of an ended job, a ``NodeEpilogCompleted``)
names it. Pure: no I/O here, the archive is the shell's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

__all__ = ["DEFAULT_MIN_JOB_AGE_S", "Archive", "expired", "track"]

DEFAULT_MIN_JOB_AGE_S = 300
"""Slurm's ``MinJobAge`` default: an ended job stays in memory 300 s after its end."""

Row = dict[str, Any]


class Archive(Protocol):
    """Where the rows the views dropped are read back from (read-only)."""

    def job(self, sluid: str) -> Row | None:
        """The stored row of job ``sluid``."""

    def sluid_of(self, job_id: int) -> str | None:
        """The SLUID of the job with id ``job_id``."""

    def array_tasks(self, array_sluid: str) -> list[Row]:
        """The stored rows of every task of array ``array_sluid``."""

    def jobs(self) -> Iterator[Row]:
        """Every stored row."""


def track(ended: dict[str, int], jobs: dict[str, Row], sluids: Iterable[str],
          active: frozenset[str]) -> None:
    """Note the rows ``sluids`` a fold changed: an ended one goes (back) to the end of
    ``ended`` (SLUID → end time, in the order they ended), an active one leaves it."""
    for sluid in sluids:
        ended.pop(sluid, None)
        row = jobs.get(sluid)
        if row is not None and row.get("state") not in active:
            ended[sluid] = int(row.get("end_ms", 0))


def expired(ended: dict[str, int], horizon_ms: int) -> list[str]:
    """Take from the front of ``ended`` the jobs that ended before ``horizon_ms``.

    ``ended`` is in the order the jobs ended; the first one that ended at or after the horizon
    stops the walk, so a row that was folded late with an older end waits at most one
    retention more."""
    out = []
    for sluid, end_ms in ended.items():
        if end_ms >= horizon_ms:
            break
        out.append(sluid)
    for sluid in out:
        del ended[sluid]
    return out
