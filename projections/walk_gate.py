"""Walks of the whole job history, one at a time per peer and a few at a time in all.

``GET /v1/jobs?all=1`` (sacct, ``scontrol show job``), ``/v1/history`` and ``/v1/usage``
(sreport) read every job the views ever stored: their CPU grows with the history (about a
second for 100,000 jobs), and any user may ask. The connections' share per peer
(:mod:`projections.peer_shares`: a quarter of 256) let one user keep 64 such walks going at
once, each taking the views' lock in turns with every other reader: ``squeue`` and the
decisions' long polls slowed for everyone. So a peer walks once at a time, and at most
:data:`WALKS` walks run together; another is answered 503 with ``Retry-After: 1`` in the
words the CLI takes for "busy, ask again" (``cli.client``, ``busy_wait_s``). Root and the
service user (no peer: ``projections.peer_shares``) are never held back nor counted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from projections.peer_shares import Peer

__all__ = ["BUSY_ANSWER", "WALKS", "WalkGate"]

WALKS = 3
"""Walks of the history that run at once (root's and the service user's aside)."""

BUSY_ANSWER = "the API serves too many walks of the job history; retry shortly"
"""The 503's error: it begins as the API's other busy answers (``cli.client._BUSY_PREFIX``)."""


class WalkGate:
    """Who walks the history now (module docstring)."""

    def __init__(self, limit: int = WALKS) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._walking: set[Peer] = set()

    @contextmanager
    def walk(self, peer: Peer | None) -> Iterator[bool]:
        """Yields whether ``peer`` may walk now; its walk ends with the block."""
        if peer is None:
            yield True
            return
        with self._lock:
            allowed = peer not in self._walking and len(self._walking) < self.limit
            if allowed:
                self._walking.add(peer)
        try:
            yield allowed
        finally:
            if allowed:
                with self._lock:
                    self._walking.discard(peer)
