"""Requests the intake decoded, handed to a shard runner of the same worker by their bytes.

The intake decodes every request to check it (``agents.intake_rules``) and forwards the
original bytes into the shard inbox; the runner that owns the shard reads them back and
decodes them again (``agents.inbox_records``). When both run in the same worker process (one
worker, or a worker that owns the request's shard) the second decode is the first one's result:
the intake leaves ``(name, record)`` here under the exact value bytes it forwarded, and the
runner takes it once the record's seal has verified, instead of decoding. A decode is a pure
function of the bytes (the same codec, the same schemas in one process), so the answer is the
one the runner would have computed; the record is never changed by either side.

Only the value decides the hit: another record with the same bytes (a replayed copy) decodes
to the same request, and the seal, freshness and origin checks run on the record as before.
The table is bounded (:data:`CAPACITY`, oldest first out): entries for shards another worker
owns, or that a runner never reads, only cost memory until they are pushed out.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["CAPACITY", "DECODED", "DecodedRequests"]

CAPACITY = 4096
"""Decoded requests kept at most (the intake runs at most a batch or two ahead of the shard;
a decoded submission is a few kB)."""


class DecodedRequests:
    """Value bytes → the ``(name, record)`` the intake decoded (see the module docstring)."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._by_value: dict[bytes, tuple[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()  # the intake's thread puts, the shard's takes

    def put(self, value: bytes, name: str, record: dict[str, Any]) -> None:
        """Keep what ``value`` decodes to, pushing the oldest entries out past the capacity."""
        with self._lock:
            table = self._by_value
            table[value] = (name, record)
            while len(table) > self.capacity:
                del table[next(iter(table))]

    def take(self, value: bytes) -> tuple[str, dict[str, Any]] | None:
        """What ``value`` decodes to, if the intake left it here (then forgotten); else None."""
        with self._lock:
            return self._by_value.pop(value, None)

    def __len__(self) -> int:
        return len(self._by_value)


DECODED = DecodedRequests()
"""The worker process's table: the intake puts, the shard runners take."""
