"""The health agent's table: each node's last stored heartbeat, kept as the shard keeps its state.

The heartbeats topic (compacted, keyed by node SLUID) is the table's log: a node's newest
heartbeat is on it for as long as the node is known. A worker folds what it reads of its
heartbeat partitions into this table (``node SLUID → {"name", "seen_ms", "partition"}``,
written when :func:`agents.health_watch.store_due` says so) and keeps it in a local RocksDB
database (``<home>/worker/health.db``) with, for each partition, the offset after the last
heartbeat folded: the database is a cache of the log's fold, as the shard's store is of the
ledger's (``agents.shard_store``), and may be deleted at any time (the partition is then folded
again from its beginning).

Layout (keys are bytes): ``e:<node SLUID>`` → the entry (JSON), ``p:<partition>`` → the
partition's next offset (decimal). :meth:`HealthStore.persist` writes what changed since the
last call, entries and positions in one ``WriteBatch``: after a crash the positions never say
more than the entries hold, and the heartbeats after them are read again (folding one twice
is harmless: the newest wins).

A write the state directory refuses (full, read-only: ``streams.state_dir``) is said by the
process's alarm and tried again at the next persist (the database reopened first, then the
whole table written: the directory may be another copy by then); the table stays in memory
meanwhile. A database that cannot be reopened (half copied into a replacement directory,
corrupt) never stops the health agent: it is set aside when corrupt, else tried again.

A database that cannot be opened (another process holds it) leaves the table in memory only:
every partition is then folded from its beginning.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from streams.rocks import RocksStore, is_corruption, open_store, set_aside
from streams.state_dir import alarm, problem_of

__all__ = ["HealthStore", "health_store_path"]

log = logging.getLogger(__name__)

_ENTRY, _POSITION = b"e:", b"p:"
_CACHE_BYTES = 4 * 1024 * 1024


def health_store_path(home: Path) -> Path:
    """Where a worker keeps its health table."""
    return Path(home) / "worker" / "health.db"


class HealthStore:
    """The table in memory, with its RocksDB copy (module docstring)."""

    def __init__(self, path: Path | None) -> None:
        self._db: RocksStore | None = None
        self._broken = False  # a write failed: reopened before the next
        if path is not None:
            try:
                self._db = open_store(path, block_cache_bytes=_CACHE_BYTES)  # corrupt: aside
            except Exception as exc:  # held by another process: memory only
                log.warning("health table %s not opened (%s): kept in memory only", path, exc)
        self._entries: dict[str, dict[str, Any]] = {}
        self._positions: dict[int, int] = {}
        self._dirty: set[str] = set()
        self._moved: set[int] = set()
        if self._db is not None and path is not None:
            try:
                self._load(self._db)
            except Exception as exc:
                if not is_corruption(exc):
                    raise
                self._db.close()  # found corrupt while read: folded again from the topic
                set_aside(path, exc)
                self._entries, self._positions = {}, {}
                self._db = open_store(path, block_cache_bytes=_CACHE_BYTES)

    def _load(self, db: RocksStore) -> None:
        for key, value in db.items(_ENTRY):
            self._entries[key[2:].decode()] = json.loads(value)
        for key, value in db.items(_POSITION):
            self._positions[int(key[2:])] = int(value)

    def get(self, node: str) -> dict[str, Any] | None:
        """The stored entry of ``node``, or None."""
        return self._entries.get(node)

    def put(self, node: str, entry: dict[str, Any]) -> None:
        """Store ``entry`` for ``node`` (persisted by the next :meth:`persist`)."""
        self._entries[node] = entry
        self._dirty.add(node)

    def items(self, partitions: Iterable[int]) -> list[tuple[str, dict[str, Any]]]:
        """The entries of the nodes whose heartbeats go to one of ``partitions``."""
        wanted = set(partitions)
        return [(node, entry) for node, entry in self._entries.items()
                if int(entry.get("partition", -1)) in wanted]

    def positions(self) -> dict[int, int]:
        """Every partition's offset after the last heartbeat folded."""
        return dict(self._positions)

    def position(self, partition: int) -> int | None:
        """The offset after the last heartbeat of ``partition`` folded, if known."""
        return self._positions.get(partition)

    def advance(self, partition: int, next_offset: int) -> None:
        """The heartbeats of ``partition`` before ``next_offset`` are folded."""
        if self._positions.get(partition, -1) < next_offset:
            self._positions[partition] = next_offset
            self._moved.add(partition)

    def persist(self) -> None:
        """Write the changed entries and positions atomically."""
        if self._db is None or not (self._dirty or self._moved):
            return
        puts = {_ENTRY + node.encode(): json.dumps(self._entries[node]).encode()
                for node in self._dirty}
        puts.update({_POSITION + str(p).encode(): str(self._positions[p]).encode()
                     for p in self._moved})
        try:
            if self._broken:
                if not self._reopen():
                    return
                puts = self._everything()
            self._db.write(puts)
        except Exception as exc:
            problem = problem_of(exc)
            if problem is None:
                if not is_corruption(exc):
                    raise
                log.warning("health table %s: %s: reopened at the next write", self._db.path,
                            exc)
                self._broken = True  # found corrupt by _reopen then, and set aside
                return
            # a full or read-only state directory: kept in memory, written when it can be
            self._broken = True
            alarm.failed(self._db.path.parent, problem, "the health table's writes")
            return
        alarm.cleared(self._db.path.parent)
        self._dirty.clear()
        self._moved.clear()

    def _reopen(self) -> bool:
        """Open the database again after a refused write; whether it is open.

        The directory may have been replaced meanwhile (an operator moved a read-only one to
        another file system, docs/operations.md) and be half copied when this runs: a
        database found corrupt is set aside and an empty one opened (the whole table is
        then written from memory); one that cannot be opened yet (a file not there yet) is
        tried again at the next persist. Neither stops the health agent."""
        assert self._db is not None
        try:
            self._db.reopen()
        except Exception as exc:
            if problem_of(exc) is not None:
                raise  # still full or read-only: said by persist
            path = self._db.path
            if not is_corruption(exc):
                log.warning("health table %s not reopened (%s): kept in memory, tried again "
                            "at the next write", path, exc)
                return False
            set_aside(path, exc)
            self._db = open_store(path, block_cache_bytes=_CACHE_BYTES)
        self._broken = False
        return True

    def _everything(self) -> dict[bytes, bytes]:
        """The whole table's writes: what a reopened database may lack (it may be another
        copy of the directory than the one that refused the write)."""
        puts = {_ENTRY + node.encode(): json.dumps(entry).encode()
                for node, entry in self._entries.items()}
        puts.update({_POSITION + str(p).encode(): str(offset).encode()
                     for p, offset in self._positions.items()})
        return puts

    def close(self) -> None:
        """Persist, then close the database."""
        self.persist()
        if self._db is not None:
            self._db.close()
            self._db = None
