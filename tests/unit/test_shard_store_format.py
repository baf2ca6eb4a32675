"""A shard store written by another shape of the core is emptied and rebuilt, never half-read.

Real RocksDB (rocksdict) under ``tmp_path``; the "older code" is a store whose format row
names another shape, as one written before a core dataclass gained a field would.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import scheduler
from agents.shard_store import STATE_FORMAT, ShardStore, state_format
from scheduler.config.auth import AuthConfig
from streams.rocks import RocksStore


def _saved(path: Path) -> None:
    store = ShardStore(path)
    state = scheduler.initial_state("s", 7)
    store.save(scheduler.state_meta(state), {"s1JOB": {"row": 1}}, {"s1NODE": {"row": 2}}, {0: 7})
    store.close()


def test_the_format_changes_when_a_core_class_gains_a_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert state_format().startswith(STATE_FORMAT + b":")
    fields = dict(AuthConfig.__dataclass_fields__)
    fields["a_new_field"] = dataclasses.field(default=0)
    monkeypatch.setattr(AuthConfig, "__dataclass_fields__", fields)
    assert state_format.__wrapped__() != state_format()  # what an upgraded core would write
    monkeypatch.undo()
    assert state_format.__wrapped__() == state_format()  # and it is stable for one shape


def test_a_store_of_this_format_loads(tmp_path: Path) -> None:
    _saved(tmp_path / "db")
    store = ShardStore(tmp_path / "db")
    snapshot = store.load()
    store.close()
    assert snapshot is not None
    assert (snapshot.jobs, snapshot.nodes, snapshot.ledger_positions) == (
        {"s1JOB": {"row": 1}}, {"s1NODE": {"row": 2}}, {0: 7})


def test_a_store_of_another_shape_is_emptied_and_not_read(tmp_path: Path) -> None:
    _saved(tmp_path / "db")
    store = ShardStore(tmp_path / "db")
    store._store.write({b"m:format": STATE_FORMAT + b":0123456789abcdef"})  # older code's
    assert store.load() is None
    assert list(store._store.items(b"j:")) == [] and list(store._store.items(b"n:")) == []
    assert store._store.get(b"m:state") is None
    store.close()
    # Saved again by this code, it loads; no row of the old store comes back.
    state = scheduler.initial_state("s", 7)
    store = ShardStore(tmp_path / "db")
    store.save(scheduler.state_meta(state), {}, {}, {})
    snapshot = store.load()
    store.close()
    assert snapshot is not None and snapshot.jobs == {} and snapshot.nodes == {}


def _corrupt_tables(path: Path) -> None:
    """Overwrite 512 bytes in the middle of every table file (a disk error, a torn copy)."""
    tables = sorted(path.glob("*.sst"))
    assert tables  # the rows are in table files, not only in the write-ahead log
    for table in tables:
        data = bytearray(table.read_bytes())
        middle = len(data) // 3
        data[middle:middle + 512] = bytes(range(256)) * 2
        table.write_bytes(bytes(data))


def _saved_in_tables(path: Path) -> None:
    _saved(path)
    raw = RocksStore(path)
    raw.flush()  # the rows must be in table files to damage them
    raw.close()


def test_a_corrupt_store_is_set_aside_and_the_shard_starts_from_an_empty_one(
    tmp_path: Path,
) -> None:
    _saved_in_tables(tmp_path / "db")
    _corrupt_tables(tmp_path / "db")
    store = ShardStore(tmp_path / "db")
    assert store.load() is None  # rebuilt from the ledger, as a missing store is
    assert (tmp_path / "db.corrupt-1").is_dir()  # kept for the operator
    state = scheduler.initial_state("s", 7)
    store.save(scheduler.state_meta(state), {"s1JOB": {"row": 3}}, {}, {0: 9})
    snapshot = store.load()
    store.close()
    assert snapshot is not None
    assert snapshot.jobs == {"s1JOB": {"row": 3}}
    assert snapshot.ledger_positions == {0: 9}
