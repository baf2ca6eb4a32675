"""The job rows in the projections' RocksDB, read on demand: what the views no longer hold.

The views keep in memory the jobs that are active and those that ended less than their
retention ago (``Views.retention_ms``, Slurm's ``MinJobAge``); every row ever folded stays in
the store. :class:`StoreArchive` is the views' :class:`projections.views.Archive` over that
store: it reads a row back by SLUID, by job id, or by array, without loading anything else.

Keys (next to the service's ``job:<SLUID>`` rows and ``meta``):

| key | value |
|---|---|
| ``jobid:<job id, 12 digits>`` | the job's SLUID (the job id → SLUID lookup) |
| ``array:<array SLUID>:<task id, 10 digits>`` | the task's SLUID |
| ``live:<SLUID>`` | empty: the row is held in memory (a restart loads only these) |

:func:`row_puts` gives the keys of one row as the service persists it; the index keys are
written with the row in the same atomic batch, so they never name a row the store lacks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from streams.rocks import RocksStore

__all__ = ["JOB", "LIVE", "StoreArchive", "job_key", "live_key", "row_puts"]

JOB, JOB_ID, ARRAY, LIVE = b"job:", b"jobid:", b"array:", b"live:"
CHUNK = 500
"""Rows read between two pauses of :meth:`StoreArchive.jobs`."""
Row = dict[str, Any]


def job_key(sluid: str) -> bytes:
    """The key of a job's row."""
    return JOB + sluid.encode()


def live_key(sluid: str) -> bytes:
    """The key saying the job's row is held in memory."""
    return LIVE + sluid.encode()


def _id_key(job_id: int) -> bytes:
    return JOB_ID + f"{int(job_id):012d}".encode()


def _array_prefix(array_sluid: str) -> bytes:
    return ARRAY + array_sluid.encode() + b":"


def row_puts(row: Row, live: bool = True) -> dict[bytes, bytes]:
    """The row, its index keys and (when ``live``) its in-memory mark, as puts."""
    sluid = str(row["job_sluid"])
    puts = {job_key(sluid): json.dumps(row).encode()}
    if row.get("job_id"):
        puts[_id_key(int(row["job_id"]))] = sluid.encode()
    if row.get("array_job_sluid"):
        task = max(int(row.get("array_task_id", 0)), 0)
        puts[_array_prefix(str(row["array_job_sluid"])) + f"{task:010d}".encode()] = sluid.encode()
    if live:
        puts[live_key(sluid)] = b""
    return puts


class StoreArchive:
    """Job rows read from the store, one at a time (see the module docstring)."""

    def __init__(self, store: RocksStore) -> None:
        self.store = store

    def job(self, sluid: str) -> Row | None:
        """The stored row of job ``sluid``."""
        raw = self.store.get(job_key(sluid)) if sluid else None
        return None if raw is None else dict(json.loads(raw))

    def sluid_of(self, job_id: int) -> str | None:
        """The SLUID of the job with id ``job_id``."""
        raw = self.store.get(_id_key(job_id))
        return None if raw is None else raw.decode()

    def array_tasks(self, array_sluid: str) -> list[Row]:
        """The stored rows of every task of array ``array_sluid``, by task id."""
        if not array_sluid:
            return []
        rows = (self.job(value.decode()) for _k, value in
                self.store.items(_array_prefix(array_sluid)))
        return [row for row in rows if row is not None]

    def jobs(self, pause: Callable[[], None] | None = None) -> Iterator[Row]:
        """Every stored row, one at a time (in SLUID order).

        With ``pause``, it is called after every :data:`CHUNK` rows, with no read of the store
        open: the views' service lets the ledger's folding and other readers in there, as
        every row ever folded can be millions (red team: 20,000 ended jobs held the views 1 s
        a ``sacct``). The rows are then each as stored when read, not all at one instant."""
        if pause is None:
            for _key, value in self.store.items(JOB):
                yield dict(json.loads(value))
            return
        after = b""
        while True:
            chunk: list[tuple[bytes, bytes]] = []
            reader = self.store.items(JOB, after)
            for key, value in reader:
                if key != after:
                    chunk.append((key, value))
                    if len(chunk) == CHUNK:
                        break
            reader.close()  # no store read spans a pause (the store may be reopened there)
            for _key, value in chunk:
                yield dict(json.loads(value))
            if len(chunk) < CHUNK:
                return
            after = chunk[-1][0]
            pause()

    def live(self) -> Iterator[Row]:
        """The rows marked as held in memory."""
        for key, _value in self.store.items(LIVE):
            row = self.job(key[len(LIVE):].decode())
            if row is not None:
                yield row
