"""Whether the views' ledger reader reaches the broker, for ``/v1/status`` and ``sluice status``.

The views answer from memory while the broker is away, and ``sluice status`` said "views:
caught up" all through a 2-minute broker outage (the last lag they measured was 0: reliability
round, 2026-12-07), so an operator could not tell stale views from a quiet cluster.
:class:`BrokerWatch` is the reader's librdkafka ``error_cb``: a transport error or "all
brokers down" starts a spell (its start time is ``since_ms``); while it lasts the reader asks
the broker for the ledger's metadata every :data:`RECHECK_S`, and the first answer (or record)
ends it. A broker stopped (SIGSTOP) rather than gone is noticed only when librdkafka's requests
to it time out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

__all__ = ["RECHECK_S", "BrokerWatch"]

log = logging.getLogger(__name__)

RECHECK_S = 2.0
"""How often a reader cut off from the broker asks it for metadata."""

_CUT_OFF = frozenset({KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT})


class BrokerWatch:
    """A spell of the broker out of reach (module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.since_ms = 0
        """When the current spell began (ms since the epoch), 0 when none."""
        self._clock, self._monotonic = clock, monotonic
        self._next_check = 0.0

    def on_error(self, error: KafkaError) -> None:
        """librdkafka's ``error_cb`` (served from the reader's ``consume``)."""
        if error.code() in _CUT_OFF and not self.since_ms:
            self.since_ms = int(self._clock() * 1000)
            self._next_check = self._monotonic() + RECHECK_S
            log.warning("ledger reader: the broker is out of reach (%s); the views answer "
                        "from what they folded", error.str())

    def heard(self) -> None:
        """A record or an answer came from the broker: a spell ends."""
        if self.since_ms:
            away_s = self._clock() - self.since_ms / 1000
            log.warning("ledger reader: the broker answers again after %.0f s", away_s)
            self.since_ms = 0

    def check(self, reader: Any, topic: str) -> None:
        """During a spell, at most every :data:`RECHECK_S`: ask for ``topic``'s metadata; an
        answer ends the spell."""
        if not self.since_ms or self._monotonic() < self._next_check:
            return
        self._next_check = self._monotonic() + RECHECK_S
        try:
            reader.list_topics(topic, timeout=1.0)
        except KafkaException:
            return
        self.heard()
