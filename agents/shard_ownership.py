"""Which shards a worker may run now: the ones the group assigned it, unless just fenced.

faust may hand the shard agent records of a partition the group has already given to another
worker: a worker stalled past its session (a long GC pause, SIGSTOP, a frozen VM) resumes with
a buffer of fetched records and learns of the rebalance only at its next heartbeat. Had it
opened a runner for them, the runner's ``init_transactions`` would fence the real owner's
producer; the owner would open a runner again and fence the zombie back, and the two would take
turns while either still had records in hand (seen in tests/e2e/test_failover.py). So:

- records of a partition not in the consumer's current assignment are left to its owner (they
  are not lost: the owner's runner reads every inbox offset past its own state's);
- a runner fenced while its partition still looks assigned waits ``backoff_s`` before opening
  again: a zombie learns of its revocation within that time, while a real owner that a zombie
  fenced takes its shard back after it (and at once when the group assigns it again);
- while the consumer cannot say what it is assigned (starting, between generations), a shard
  already running goes on and none is opened.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection

__all__ = ["Ownership"]

log = logging.getLogger(__name__)


class Ownership:
    """The shard agent's view of which inbox partitions it may run a runner for."""

    def __init__(self, backoff_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.backoff_s = backoff_s
        self._clock = clock
        self._fenced_at: dict[int, float] = {}
        self._skipping: set[int] = set()

    def fenced(self, index: int) -> None:
        """The runner of ``index`` was fenced by another owner's producer."""
        self._fenced_at[index] = self._clock()

    def assigned(self, indexes: Collection[int]) -> None:
        """The group (re)assigned ``indexes`` here: its word is newer than any fence seen."""
        for index in indexes:
            self._fenced_at.pop(index, None)

    def may_run(self, index: int, assignment: Collection[int] | None,
                running: bool = False) -> bool:
        """Whether records of partition ``index`` are decided here now (logged on change).
        ``assignment`` is None while the consumer cannot say (starting, between generations):
        a shard already ``running`` here goes on (its transaction still fences it if it moved),
        none is opened on a guess."""
        if assignment is None:
            return running
        if index not in assignment:
            reason = "it is not assigned to this worker"
        elif self._clock() - self._fenced_at.get(index, float("-inf")) < self.backoff_s:
            reason = f"another worker fenced it less than {self.backoff_s:.0f} s ago"
        else:
            if index in self._skipping:
                self._skipping.discard(index)
                log.info("shard %d: deciding its records again", index)
            self._fenced_at.pop(index, None)
            return True
        if index not in self._skipping:
            self._skipping.add(index)
            log.warning("shard %d: its records are left to its owner: %s", index, reason)
        return False
