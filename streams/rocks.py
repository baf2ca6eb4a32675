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
from collections.abc import Iterator, Mapping
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
        self._db = Rdict(str(path), options, access_type=AccessType.read_write())
        self._sync = WriteOptions()
        self._sync.sync = False  # the ledger, not the local DB, is the durable copy

    def get(self, key: bytes) -> bytes | None:
        """The value at ``key``, or None."""
        value = self._db.get(key)
        return None if value is None else bytes(value)

    def items(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) whose key starts with ``prefix``, in key order."""
        for key, value in self._db.items(from_key=prefix):
            if not bytes(key).startswith(prefix):  # type: ignore[arg-type]
                return
            yield bytes(key), bytes(value)  # type: ignore[arg-type]

    def write(self, puts: Mapping[bytes, bytes], deletes: list[bytes] | None = None) -> None:
        """Apply ``puts`` and ``deletes`` atomically."""
        batch = WriteBatch(raw_mode=True)
        for key in deletes or ():
            batch.delete(key)
        for key, value in puts.items():
            batch.put(key, value)
        self._db.write(batch, self._sync)

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
        """Flush and close the database."""
        self._db.close()

    @staticmethod
    def destroy(path: Path) -> None:
        """Delete a closed database from disk."""
        Rdict.destroy(str(path), Options(raw_mode=True))


def is_corruption(exc: BaseException) -> bool:
    """Whether ``exc`` is RocksDB's ``Corruption`` status (rocksdict raises a plain
    ``Exception`` whose text starts with the status name; an I/O error, a full or read-only
    disk, a held lock are other statuses, not corruption)."""
    return type(exc) is Exception and str(exc).startswith("Corruption:")


def set_aside(path: Path, exc: BaseException) -> Path:
    """Move the (closed) corrupt database at ``path`` to a free ``<name>.corrupt-<n>`` beside
    it and log why; its owner then opens an empty one at ``path``."""
    n = 1
    while (aside := path.with_name(f"{path.name}.corrupt-{n}")).exists():
        n += 1
    path.rename(aside)
    log.error("%s is corrupt (%s): moved to %s; it is rebuilt from the ledger", path, exc,
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
