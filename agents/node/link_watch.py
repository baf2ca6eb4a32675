"""A node daemon's Kafka clients that librdkafka has cut off for good, noticed and replaced.

After a broker stall, librdkafka 2.16 can take a metadata answer listing no broker as the
cluster's truth, decommission every broker it knew, its bootstrap broker included, and never
look again (confluentinc/librdkafka#5301; docs/operations.md, "A broker away"; the worker's
loops are watched by :mod:`agents.group_watch`). Each client of a daemon is hit on its own:

- its **producer** so cut off delivers no heartbeat again: the node goes DOWN, its runs are
  fenced, and it would never come back until the daemon restarted;
- its **command reader** reads nothing again: the node heartbeats, looks idle, and every
  launch sent to it waits in vain.

Neither can be told from a broker that is simply away, except by asking it with a new client.
So the loop keeps two facts and :class:`LinkWatch` weighs them once a pass:

- how long no heartbeat has been delivered (the runs' lease, ``agents.node.fence``);
- when the reader last answered: a batch of messages, or its partition's end asked once a
  minute by the feed's own thread (:data:`READER_CHECK_S`; one ``ListOffsets`` round trip).

When either has been out for :func:`replace_after_s` (``SLUICE_NODE_RELINK_TIMEOUT``, default
60 s; for the reader, past the minute between two of its checks), a new client is asked on a
thread of its own (the loop never waits on the broker) at most once per that time. If the
new client is answered, what is still out is replaced at the loop's next pass; if not, the
broker is away and a new client would do no better.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["PRODUCER", "READER", "READER_CHECK_S", "LinkWatch", "let_go", "replace_after_s"]

PRODUCER = "producer"
READER = "reader"
READER_CHECK_S = 60.0
"""How often the command reader's thread asks its partition's end while nothing arrives."""


def replace_after_s() -> float:
    """``SLUICE_NODE_RELINK_TIMEOUT`` (seconds, default 60): how long a daemon's producer or
    command reader may be out while a new client reaches the broker before it is replaced."""
    return float(os.environ.get("SLUICE_NODE_RELINK_TIMEOUT", "60"))


class LinkWatch:
    """What a daemon should replace, from its clients' last signs of life (module docstring)."""

    def __init__(self, limit_s: float, probe: Callable[[], bool],
                 start: Callable[[Callable[[], None]], None] | None = None) -> None:
        self.limit_s = limit_s
        self._probe = probe
        self._start = start or _on_a_thread
        self._lock = threading.Lock()
        self._probing = False
        self._found: frozenset[str] | None = None  # what the last probe found replaceable
        self._next_probe = 0.0

    def due(self, now: float, lease_lapsed_at: float | None,
            reader_answered_at: float) -> frozenset[str]:
        """What to replace now (:data:`PRODUCER`, :data:`READER`): what a probe answered by
        the broker found out and is out still. Starts a probe when something is out and none
        is running or was made within ``limit_s``."""
        out = set()
        if lease_lapsed_at is not None and now - lease_lapsed_at >= self.limit_s:
            out.add(PRODUCER)
        if now - reader_answered_at >= READER_CHECK_S + self.limit_s:  # asked once a minute
            out.add(READER)
        with self._lock:
            found, self._found = self._found, None
            if found:
                self._next_probe = now + self.limit_s  # what replaces them gets its time
                return found & frozenset(out)
            if not out or self._probing or now < self._next_probe:
                return frozenset()
            self._probing, self._next_probe = True, now + self.limit_s
        suspects = frozenset(out)
        self._start(lambda: self._ask(suspects))
        return frozenset()

    def _ask(self, suspects: frozenset[str]) -> None:
        try:
            answered = self._probe()
        except Exception:  # a probe that fails says the broker did not answer
            answered = False
        with self._lock:
            self._found = suspects if answered else None
            self._probing = False


def _on_a_thread(work: Callable[[], None]) -> None:
    threading.Thread(target=work, name="link-probe", daemon=True).start()


def let_go(producer: Any) -> None:
    """Fail what a replaced producer still holds, at once (its delivery reports, from a
    ``poll`` here, send the daemon's reports again through the new one: agents.node.outbox),
    and destroy it on a thread of its own: a client without brokers must not hold the loop."""
    try:
        producer.purge()
        producer.poll(0)
    except Exception:  # nothing it held is lost: a report not acknowledged is sent again
        pass
    held = [producer]
    del producer
    threading.Thread(target=held.clear, name="let-go-producer", daemon=True).start()
