"""A RocksDB table file damaged where the rows are: reading them raises Corruption, never ends
early as if every row were read (rocksdict's ``items()`` did: a shard loaded its meta and none
of its running jobs, and allocated their nodes again)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.shard_store import ShardStore
from streams.rocks import RocksStore, is_corruption


def _damaged_store(path: Path) -> None:
    """2,000 rows flushed to a table file, then its first data block overwritten; the meta row
    (written last, so in a later block) still reads."""
    store = RocksStore(path)
    store.write({b"j:%06d" % i: bytes(200) for i in range(2000)})
    store.write({b"zz:meta": b"meta"})
    store.flush()
    store.close()
    [table] = path.glob("*.sst")
    with table.open("r+b") as file:
        file.seek(1024)
        file.write(bytes(range(256)) * 8)


def test_rows_read_from_a_damaged_block_raise_corruption(tmp_path: Path) -> None:
    _damaged_store(tmp_path / "db")
    store = RocksStore(tmp_path / "db")
    try:
        assert store.get(b"zz:meta") == b"meta"  # the damage is not in every block
        with pytest.raises(Exception) as raised:  # rocksdict raises a plain Exception
            list(store.items(b"j:"))
        assert is_corruption(raised.value)
    finally:
        store.close()


def test_rows_of_an_intact_store_are_all_read_in_key_order_from_start(tmp_path: Path) -> None:
    store = RocksStore(tmp_path / "db")
    try:
        store.write({b"a:1": b"x", b"j:1": b"1", b"j:2": b"2", b"j:3": b"3", b"k:1": b"y"})
        assert list(store.items(b"j:")) == [(b"j:1", b"1"), (b"j:2", b"2"), (b"j:3", b"3")]
        assert list(store.items(b"j:", b"j:2")) == [(b"j:2", b"2"), (b"j:3", b"3")]
        assert list(store.items(b"q:")) == []
    finally:
        store.close()


def test_a_shard_store_damaged_under_its_rows_is_set_aside_and_opens_empty(
    tmp_path: Path,
) -> None:
    """The walk's error reaches ``ShardStore.load``, which sets the store aside and opens an
    empty one at the same path (the walk's iterator, which kept the damaged database open and
    its lock held, is gone by then: the reopen failed with "lock hold by current process")."""
    path = tmp_path / "shard-s.db"
    store = ShardStore(path)
    store.save({"seq": 7}, {f"s{i:05d}": {"job": i} for i in range(2000)}, {"n": {"cpus": 4}},
               {0: 10})
    store._store.flush()  # the rows into a table file
    store.close()
    [table] = path.glob("*.sst")
    with table.open("r+b") as file:
        file.seek(64)
        file.write(bytes(range(128)))
    store = ShardStore(path)
    try:
        assert store.load() is None  # rebuilt from the ledger by the caller
        assert (tmp_path / "shard-s.db.corrupt-1").is_dir()
        store.save({"seq": 1}, {"s1": {"job": 1}}, {}, {})
        snapshot = store.load()
        assert snapshot is not None
        assert snapshot.jobs == {"s1": {"job": 1}}
    finally:
        store.close()
