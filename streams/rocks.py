"""Local RocksDB stores (rocksdict) with the memory settings a shared 2-core box needs.

Used by the shard scheduler for its state and by the projections for their views. Keys and
values are raw bytes; a batch of writes goes through one ``WriteBatch`` so it lands atomically
(the state rows and the offsets they correspond to can never disagree after a crash).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from rocksdict import AccessType, BlockBasedOptions, Cache, Options, Rdict, WriteBatch, WriteOptions

__all__ = ["RocksStore"]

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

    def close(self) -> None:
        """Flush and close the database."""
        self._db.close()

    @staticmethod
    def destroy(path: Path) -> None:
        """Delete a closed database from disk."""
        Rdict.destroy(str(path), Options(raw_mode=True))
