"""The worker's Kafka client logs, one line a minute per kind while the broker is away.

aiokafka (under faust) logs every failed reconnect, metadata refresh, fetch, coordinator lookup
and produce retry at ERROR or WARNING, about every 100 ms each: a worker wrote about 110 lines
a second while its broker was down (13,600 lines for a 2-minute outage; a day's outage would
be millions), which buries the lines that say what the worker itself does ("health agent is
blind", a shard stalled) and can fill the disk the logs share with the state directory
(reliability round, 2026-12-07). :class:`RepeatFilter` lets the first record of each kind (its
logger and message template) through, then holds back the same kind for ``window_s``, and the
first one after the window says how many were held back. Nothing else is filtered.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["KAFKA_CLIENT_LOGGERS", "RepeatFilter", "quiet_repeats"]

KAFKA_CLIENT_LOGGERS = (
    "aiokafka", "aiokafka.conn", "aiokafka.cluster", "aiokafka.consumer.consumer",
    "aiokafka.consumer.fetcher", "aiokafka.consumer.group_coordinator",
    "aiokafka.producer.producer", "aiokafka.producer.sender",
)
"""The loggers aiokafka logs its connection troubles to (a filter on a logger sees only the
records made at that logger, not its children's)."""

WINDOW_S = 60.0


class RepeatFilter(logging.Filter):
    """At most one record per (logger, message template) per window, with the held-back count."""

    def __init__(self, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window_s = window_s
        self.clock = clock
        self._kinds: dict[tuple[str, str], tuple[float, int]] = {}
        """(logger, template) → (when the last one went through, how many held back since)."""

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = self.clock()
        shown = self._kinds.get(key)
        if shown is not None and now - shown[0] < self.window_s:
            self._kinds[key] = (shown[0], shown[1] + 1)
            return False
        self._kinds[key] = (now, 0)
        if shown is not None and shown[1]:
            more = f" ({shown[1]} more like it in the last {now - shown[0]:.0f} s)"
            record.msg = str(record.msg) + more
        return True


def quiet_repeats(names: tuple[str, ...] = KAFKA_CLIENT_LOGGERS,
                  window_s: float = WINDOW_S) -> RepeatFilter:
    """Put one :class:`RepeatFilter` on each logger of ``names``; the filter."""
    repeat = RepeatFilter(window_s)
    for name in names:
        logging.getLogger(name).addFilter(repeat)
    return repeat
