"""A worker asked to stop (SIGTERM, SIGINT) that has not stopped in time ends itself.

A worker's stop waits on the broker: faust commits its consumers' offsets and flushes its
producer before the worker's own loops are told to stop. With the broker stopped (SIGSTOP, a
frozen VM) a SIGTERM'd worker was still up 150 s later (reliability round, 2026-12-07: it ended
only once the broker resumed), so a supervisor without a kill timeout waited as long as the
broker did. So the first stop signal arms a deadline, :func:`stop_timeout_s` (
``SLUICE_WORKER_STOP_TIMEOUT``, 30 s): past it the worker logs one line and exits at once
(status 1), as a crash would. Nothing accepted is lost by that: every shard's state is the fold
of the ledger, a batch not committed is read again, and the state directory's lock goes with
the process.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from faust.worker import Worker

__all__ = ["DeadlineWorker", "arm_stop_deadline", "stop_timeout_s"]

log = logging.getLogger(__name__)


def stop_timeout_s() -> float:
    """``SLUICE_WORKER_STOP_TIMEOUT`` (seconds, default 30): how long a stop may take."""
    return float(os.environ.get("SLUICE_WORKER_STOP_TIMEOUT", "30"))


def arm_stop_deadline(timeout_s: float, end: Callable[[int], Any] = os._exit) -> threading.Thread:
    """Start a daemon thread that ``end(1)``\\ s the process unless it has exited within
    ``timeout_s``."""

    def expire() -> None:
        log.warning("the worker has not stopped %.0f s after it was asked to (the broker away?): "
                    "it exits now, as a crash would; nothing accepted is lost", timeout_s)
        for handler in logging.getLogger().handlers:
            handler.flush()
        end(1)

    timer = threading.Timer(timeout_s, expire)
    timer.name, timer.daemon = "stop-deadline", True
    timer.start()
    return timer


class DeadlineWorker(Worker):
    """faust's worker, whose first stop signal arms :func:`arm_stop_deadline`."""

    _deadline: threading.Thread | None = None

    def _schedule_shutdown(self, signal: Any) -> None:  # mode's one path for SIGTERM and SIGINT
        if self._deadline is None:
            self._deadline = arm_stop_deadline(stop_timeout_s())
        super()._schedule_shutdown(signal)
