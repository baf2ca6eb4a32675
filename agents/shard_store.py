"""The shard scheduler's local state: RocksDB rows for jobs and nodes plus one meta row.

Layout (keys are bytes):

| key | value |
|---|---|
| ``j:<job SLUID>`` | one job (pickled core object) |
| ``n:<node SLUID>`` | one node |
| ``m:state`` | the rest of the shard state (``scheduler.state_meta``) |
| ``m:ledger`` | ledger positions (partition → next offset) after the last batch written |
| ``m:format`` | the state format: version and the shape of the core's classes |

Every batch is one atomic ``WriteBatch``. The store is a cache of the ledger fold: it can be
deleted at any time and is rebuilt from the ledger (the only durable truth).

The rows are pickled core objects, so a store written by another version of the code may hold
objects of another shape: a dataclass that gained a field unpickles without it, and the first
use of that field fails in every batch (seen when a worker restarted on a newer core during
tests/e2e/test_failover.py). :func:`state_format` therefore names, besides ``STATE_FORMAT``,
a digest of every core dataclass's fields; a store of any other format is **emptied** and the
shard is rebuilt from the ledger (emptied, not overwritten: a job the new fold no longer has
must not come back from an old row). A store RocksDB finds corrupt, when it opens or while
the snapshot is read, is moved aside (``streams.rocks.set_aside``) and the shard rebuilt from
the ledger likewise (it failed every batch of the shard, for ever).
"""

from __future__ import annotations

import hashlib
import importlib
import pickle
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import scheduler
from streams.rocks import RocksStore, is_corruption, open_store, set_aside

__all__ = ["STATE_FORMAT", "ShardSnapshot", "ShardStore", "state_format", "store_path"]

STATE_FORMAT = b"4"  # 4: jobs hold their open steps (older formats are rebuilt)
_JOB, _NODE = b"j:", b"n:"
_META, _LEDGER, _FORMAT = b"m:state", b"m:ledger", b"m:format"


@cache
def state_format() -> bytes:
    """``STATE_FORMAT`` and a digest of the shape (qualified name, field names) of every
    dataclass the ``scheduler`` package defines, all its modules imported in name order."""
    shapes = []
    modules = pkgutil.walk_packages(scheduler.__path__, "scheduler.")
    for name in sorted(info.name for info in modules):
        module = importlib.import_module(name)
        for obj in vars(module).values():
            fields = getattr(obj, "__dataclass_fields__", None)
            if isinstance(obj, type) and fields is not None and obj.__module__ == name:
                shapes.append(f"{name}.{obj.__qualname__}({','.join(fields)})")
    digest = hashlib.sha256("\n".join(sorted(shapes)).encode()).hexdigest()[:16]
    return STATE_FORMAT + b":" + digest.encode()


def store_path(home: Path, shard: str) -> Path:
    """Where a worker keeps the store of ``shard`` (owned, or kept warm as a standby)."""
    return Path(home) / "worker" / f"shard-{shard}.db"


@dataclass(frozen=True, slots=True)
class ShardSnapshot:
    """What a store holds: the pieces ``scheduler.restore_state`` needs, and ledger positions."""

    meta: Any
    jobs: dict[str, Any]
    nodes: dict[str, Any]
    ledger_positions: dict[int, int]


class ShardStore:
    """One shard's RocksDB database."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._store = open_store(path)

    def load(self) -> ShardSnapshot | None:
        """The stored snapshot, or None when empty, of another format (then emptied) or
        corrupt (then set aside for an empty store)."""
        try:
            return self._load()
        except Exception as exc:
            if not is_corruption(exc):
                raise
            self._store.close()
            set_aside(self._path, exc)
            self._store = RocksStore(self._path)
            return None

    def set_aside(self, why: str) -> None:
        """Move the store aside as folded from another ledger (``streams.stale_store``) and
        open an empty one."""
        self._store.close()
        set_aside(self._path, why, kind="stale")
        self._store = RocksStore(self._path)

    def _load(self) -> ShardSnapshot | None:
        stored = self._store.get(_FORMAT)
        if stored != state_format():
            if stored is not None:
                self._empty()
            return None
        meta_bytes = self._store.get(_META)
        if meta_bytes is None:
            return None
        jobs = {k[2:].decode(): pickle.loads(v) for k, v in self._store.items(_JOB)}
        nodes = {k[2:].decode(): pickle.loads(v) for k, v in self._store.items(_NODE)}
        positions = pickle.loads(self._store.get(_LEDGER) or pickle.dumps({}))
        return ShardSnapshot(pickle.loads(meta_bytes), jobs, nodes, positions)

    def save(
        self,
        meta: Any,
        jobs: Mapping[str, Any | None],
        nodes: Mapping[str, Any | None],
        ledger_positions: Mapping[int, int],
    ) -> None:
        """Write changed rows (None deletes) and the meta, atomically."""
        puts: dict[bytes, bytes] = {}
        deletes: list[bytes] = []
        for prefix, rows in ((_JOB, jobs), (_NODE, nodes)):
            for key, row in rows.items():
                if row is None:
                    deletes.append(prefix + key.encode())
                else:
                    puts[prefix + key.encode()] = pickle.dumps(row, pickle.HIGHEST_PROTOCOL)
        puts[_META] = pickle.dumps(meta, pickle.HIGHEST_PROTOCOL)
        puts[_LEDGER] = pickle.dumps(dict(ledger_positions))
        puts[_FORMAT] = state_format()
        self._store.write(puts, deletes)

    def _empty(self) -> None:
        """Delete every row (a store of another format: the shard is rebuilt)."""
        keys = [key for prefix in (_JOB, _NODE, b"m:") for key, _ in self._store.items(prefix)]
        self._store.write({}, keys)

    def close(self) -> None:
        """Close the database."""
        self._store.close()
