"""Local RocksDB stores (rocksdict) with the memory settings a shared 2-core box needs.

Used by the shard scheduler for its state and by the projections for their views. Keys and
values are raw bytes; a batch of writes goes through one ``WriteBatch`` so it lands atomically
(the state rows and the offsets they correspond to can never disagree after a crash).

Both stores are caches of a fold of the ledger. A store RocksDB finds corrupt (a block whose
checksum does not match, a damaged manifest: a disk error, a torn copy) is therefore moved
aside (:func:`set_aside`, to ``<name>.corrupt-<n>`` beside it, kept for the operator) and its
owner starts again from an empty one, rebuilt from the ledger, instead of failing at every
start (the shard's every batch, the views' process) until someone deletes it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator, Mapping
from pathlib import Path

from rocksdict import AccessType, BlockBasedOptions, Cache, Options, Rdict, WriteBatch, WriteOptions

__all__ = ["RocksStore", "is_corruption", "open_store", "set_aside"]

log = logging.getLogger(__name__)

BLOCK_CACHE_BYTES = 64 * 1024 * 1024  # faust's default is 2 GiB per partition DB
WRITE_BUFFER_BYTES = 16 * 1024 * 1024


class RocksStore:
    """A RocksDB database of bytes → bytes with atomic batch writes."""

    def __init__(self, path: Path, block_cache_bytes: int = BLOCK_CACHE_BYTES) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_write_buffer_size(WRITE_BUFFER_BYTES)
        options.set_max_write_buffer_number(2)
        table = BlockBasedOptions()
        table.set_block_cache(Cache(block_cache_bytes))
        options.set_block_based_table_factory(table)
        self.path = path
        self._options = options
        self._db = Rdict(str(path), options, access_type=AccessType.read_write())
        self._failed = False  # a write failed: RocksDB refuses the rest until reopened
        self._writing = threading.Lock()
        self.wait_out: Callable[[Path, Exception], bool] | None = None
        """Called (without the store's lock) when a write failed: True when it waited until
        the write may be tried again, False to raise it."""
        self.written: Callable[[Path], None] | None = None
        """Called after each write that landed (with the directory)."""
        self._sync = WriteOptions()
        self._sync.sync = False  # the ledger, not the local DB, is the durable copy

    def get(self, key: bytes) -> bytes | None:
        """The value at ``key``, or None."""
        value = self._db.get(key)
        return None if value is None else bytes(value)

    def items(self, prefix: bytes, start: bytes = b"") -> Generator[tuple[bytes, bytes]]:
        """Every (key, value) whose key starts with ``prefix``, in key order (from ``start``
        on, when it is given). An iterator that stopped on an error (a corrupt block) raises
        that status (``Corruption: …``, :func:`is_corruption`) instead of ending early:
        rocksdict's ``items()`` ended as if the rows were all read, so a worker whose shard
        store had a damaged table file loaded its meta (read by ``get``) with none of its
        running jobs and allocated their nodes' CPUs again (reliability round, 2026-12-07).
        """
        cursor = self._db.iter()
        cursor.seek(max(prefix, start))
        while cursor.valid():
            key = bytes(cursor.key())
            if not key.startswith(prefix):
                return
            yield key, bytes(cursor.value())
            cursor.next()
        try:
            cursor.status()  # raises the error that ended the iteration, if one did
        except Exception as exc:
            error = exc
        else:
            return
        # The iterator keeps the database open (its lock held, the directory not really
        # closed) for as long as it lives; the error's traceback holds this frame, so the
        # iterator goes first, or a store set aside for this error cannot be opened again.
        del cursor
        raise error

    def write(self, puts: Mapping[bytes, bytes], deletes: list[bytes] | None = None) -> None:
        """Apply ``puts`` and ``deletes`` atomically.

        A write that fails is raised, unless :attr:`wait_out` is set and returns True for
        it (a full or read-only directory, waited out: ``streams.state_dir``): then the
        database is reopened and the same batch written again, until it lands."""
        while True:
            batch = WriteBatch(raw_mode=True)
            for key in deletes or ():
                batch.delete(key)
            for key, value in puts.items():
                batch.put(key, value)
            with self._writing:
                try:
                    if self._failed:
                        self.reopen()
                    self._db.write(batch, self._sync)
                except Exception as exc:
                    self._failed = True
                    error = exc
                else:
                    if self.written is not None:
                        self.written(self.path.parent)
                    return
            if self.wait_out is None or not self.wait_out(self.path.parent, error):
                raise error

    def memory(self) -> dict[str, int]:
        """Bytes RocksDB holds in memory: ``memtables`` (at most 2 write buffers) and
        ``block_cache`` (at most its capacity)."""
        props = {"memtables": "rocksdb.cur-size-all-mem-tables",
                 "block_cache": "rocksdb.block-cache-usage"}
        return {kind: int(self._db.property_int_value(name) or 0) for kind, name in props.items()}

    def flush(self) -> None:
        """Write the memtables to table files (the write-ahead log holds them meanwhile)."""
        self._db.flush()

    def close(self) -> None:
        """Flush and close the database. After a failed write (a full disk) RocksDB reports
        that error again on close; it is not raised twice (the database is closed)."""
        try:
            self._db.close()
        except Exception as exc:
            if not self._failed:
                raise
            log.debug("%s: closed after a failed write (%s)", self.path, exc)

    def reopen(self) -> None:
        """Close the database, whatever error it reports, and open it again: after a failed
        write (a full disk) RocksDB refuses every later write ("Writer has previous error")
        until it is reopened; the writes it took are in its log (``streams.state_dir``)."""
        try:
            self._db.close()
        except Exception as exc:  # the error it is reopened for
            log.debug("%s: closed with %s", self.path, exc)
        self._failed = False
        self._db = Rdict(str(self.path), self._options, access_type=AccessType.read_write())

    @staticmethod
    def destroy(path: Path) -> None:
        """Delete a closed database from disk."""
        Rdict.destroy(str(path), Options(raw_mode=True))


def is_corruption(exc: BaseException) -> bool:
    """Whether ``exc`` is RocksDB's ``Corruption`` status (rocksdict raises a plain
    ``Exception`` whose text starts with the status name; an I/O error, a full or read-only
    disk, a held lock are other statuses, not corruption)."""
    return type(exc) is Exception and str(exc).startswith("Corruption:")


def set_aside(path: Path, exc: BaseException | str, kind: str = "corrupt") -> Path:
    """Move the (closed) database at ``path`` to a free ``<name>.<kind>-<n>`` beside it and log
    why (``exc``: RocksDB's corruption, or a sentence); its owner then opens an empty one at
    ``path``."""
    n = 1
    while (aside := path.with_name(f"{path.name}.{kind}-{n}")).exists():
        n += 1
    path.rename(aside)
    log.error("%s is %s (%s): moved to %s; it is rebuilt from the ledger", path, kind, exc,
              aside)
    return aside


def open_store(path: Path, block_cache_bytes: int = BLOCK_CACHE_BYTES) -> RocksStore:
    """The store at ``path``; a corrupt one is set aside first and an empty one opened."""
    try:
        return RocksStore(path, block_cache_bytes)
    except Exception as exc:
        if not is_corruption(exc):
            raise
        set_aside(path, exc)
        return RocksStore(path, block_cache_bytes)
