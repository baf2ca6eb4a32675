"""Which job rows the views hold in memory: the active ones and a recent window of ended ones.

Like slurmctld, which forgets an ended job ``MinJobAge`` after its end (squeue no longer shows
it, sacct still does), the views drop an ended job's row from memory once it ended (or a fact
last changed it) more than ``retention_ms`` ago, measured against the views' own clock (the
time of the newest fact folded), never the wall clock, so a rebuild drops the same rows at the
same facts. The row
stays in the store; an :class:`Archive` (the service's :class:`projections.archive.StoreArchive`)
reads it back when a query or a late fact (a requeue of an ended job, a ``NodeEpilogCompleted``)
names it. Pure: no I/O here, the archive is the shell's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
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

    def jobs(self, pause: Callable[[], None] | None = None) -> Iterator[Row]:
        """Every stored row (calling ``pause`` now and then, when given)."""


def track(ended: dict[str, int], jobs: dict[str, Row], sluids: Iterable[str],
          active: frozenset[str], now_ms: int | None) -> None:
    """Note the rows ``sluids`` a fold changed at ``now_ms`` (the views' clock): an ended one
    goes (back) to the end of ``ended`` (SLUID → the time it was last changed, oldest first),
    an active one leaves it. With ``now_ms`` None (rows loaded at start) the row's end time
    is taken."""
    for sluid in sluids:
        ended.pop(sluid, None)
        row = jobs.get(sluid)
        if row is not None and row.get("state") not in active:
            end_ms = int(row.get("end_ms", 0))
            ended[sluid] = end_ms if now_ms is None else max(now_ms, end_ms)


def expired(ended: dict[str, int], horizon_ms: int) -> list[str]:
    """Take from the front of ``ended`` the jobs last changed before ``horizon_ms``.

    ``ended`` is in the order the rows were last changed, so the walk stops at the first one
    changed at or after the horizon: the cost is the rows dropped, not the rows held."""
    out = []
    for sluid, changed_ms in ended.items():
        if changed_ms >= horizon_ms:
            break
        out.append(sluid)
    for sluid in out:
        del ended[sluid]
    return out
