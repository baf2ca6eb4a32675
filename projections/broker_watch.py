"""Whether the views' ledger reader reaches the broker, for ``/v1/status`` and ``sluice status``.

The views answer from memory while the broker is away, and ``sluice status`` said "views:
caught up" all through a 2-minute broker outage (the last lag they measured was 0: reliability
round, 2026-12-07), so an operator could not tell stale views from a quiet cluster.
:class:`BrokerWatch` is the reader's librdkafka ``error_cb``: a transport error or "all
brokers down" starts a spell (its start time is ``since_ms``); while it lasts the reader asks
the broker for the ledger's metadata every :data:`RECHECK_S`, and the first answer (or record)
ends it.

A broker stopped (SIGSTOP, a frozen VM) rather than gone refuses nothing: librdkafka's requests
to it time out only after a minute or more, and ``sluice status`` said "caught up" meanwhile.
So a probe thread (:func:`probe_forever`) asks the broker for the ledger's metadata every
:data:`PROBE_S` with a client of its own (``streams.admin.BrokerProbe``: one client kept while
it is answered, a new one after a probe left unanswered), and two probes in a row left
unanswered start a spell too (one slow answer on a busy host is not a stall). And a reader
whose spell lasts :data:`REBUILD_S` while the probe's client is answered is cut off on its own
(librdkafka 2.16 can forget every broker after a stall and never look for them again:
confluentinc/librdkafka#5301, ``agents.group_watch``), so the service replaces it
(:meth:`BrokerWatch.reader_cut_off`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

__all__ = ["PROBE_S", "REBUILD_S", "RECHECK_S", "BrokerWatch", "probe_forever"]

log = logging.getLogger(__name__)

RECHECK_S = 2.0
"""How often a reader cut off from the broker asks it for metadata."""

PROBE_S = 5.0
"""How often the probe asks the broker, and how long it waits for the answer."""

REBUILD_S = 30.0
"""How long a reader may stay cut off while the probe's client is answered."""

_CUT_OFF = frozenset({KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT})


class BrokerWatch:
    """A spell of the broker out of reach (module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.since_ms = 0
        """When the current spell began (ms since the epoch), 0 when none."""
        self._clock, self._monotonic = clock, monotonic
        self._next_check = 0.0
        self._answered_since: float | None = None  # the probe answered ever since
        self._unanswered = 0  # probes unanswered in a row

    def on_error(self, error: KafkaError) -> None:
        """librdkafka's ``error_cb`` (served from the reader's ``consume``)."""
        if error.code() in _CUT_OFF and not self.since_ms:
            self.since_ms = int(self._clock() * 1000)
            self._next_check = self._monotonic() + RECHECK_S
            log.warning("ledger reader: the broker is out of reach (%s); the views answer "
                        "from what they folded", error.str())

    def probed(self, answered: bool) -> None:
        """The probe's outcome: an unanswered probe starts a spell (a stalled broker)."""
        self._unanswered = 0 if answered else self._unanswered + 1
        if not answered:
            self._answered_since = None
        elif self._answered_since is None:
            self._answered_since = self._monotonic()
        # two in a row: one slow answer on a busy host is no stall
        if not answered and self._unanswered >= 2 and not self.since_ms:
            self.since_ms = int(self._clock() * 1000)
            self._next_check = self._monotonic() + RECHECK_S
            log.warning("ledger reader: the broker has not answered for %.0f s; the views "
                        "answer from what they folded", 2 * PROBE_S)

    def reader_cut_off(self) -> bool:
        """Whether the reader's spell has lasted :data:`REBUILD_S`, the last half of it with
        every probe answered (then the reader should be replaced; the spell restarts)."""
        if not self.since_ms:
            return False
        away_s = self._clock() - self.since_ms / 1000
        answered_s = (0.0 if self._answered_since is None
                      else self._monotonic() - self._answered_since)
        if away_s < REBUILD_S or answered_s < REBUILD_S / 2:  # a reader that reaches the
            return False                                      # broker says so within 2 s
        log.warning("ledger reader: cut off for %.0f s while the broker answers a new client "
                    "(librdkafka lost its brokers after a stall?): replacing the reader", away_s)
        self.since_ms = int(self._clock() * 1000)
        return True

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


def probe_forever(watch: BrokerWatch, ask: Callable[[], bool], stopping: threading.Event) -> None:
    """Until ``stopping``: ``ask`` the broker (``True`` when it answered within
    :data:`PROBE_S`) every :data:`PROBE_S`, at once again after no answer, and tell
    ``watch``."""
    answered = True
    while not stopping.wait(PROBE_S if answered else 0):
        answered = ask()
        watch.probed(answered)
