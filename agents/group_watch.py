"""A group consumer that librdkafka has left out of its group for good, noticed and replaced.

After a broker stall (SIGSTOP, a frozen VM, a long GC pause) a KRaft broker can answer a
metadata request that was waiting in its socket with a list of **no** brokers (most likely its
controller has fenced the broker that stalled, itself, until its next heartbeat). librdkafka
2.16 then decommissions every broker it knows ("Decommissioning this broker", ``ControllerId
update 1 -> -1``), its bootstrap broker included, and never re-bootstraps: the client is left
with no broker at all, for good ("no broker available for coordinator query", "Not selecting
any broker for cluster connection" once a second; confluentinc/librdkafka#5301, open). A group
consumer so cut off stays out of its group — no shard owned, nothing scheduled — and its
``close`` waits for its offset commits.

No librdkafka setting prevents it (``broker.version.fallback`` and ``api.version.*`` play no
part: any fallback from 0.10 on only means "ask the broker"), so each worker loop checks its
consumer once a pass: when it has had no member id for ``limit_s`` while a fresh client is
answered by the broker, the consumer is replaced (the old one is closed on a thread of its
own, not waited for) and a warning says so. The check is in the consumer itself
(:class:`WatchedConsumer`, which ``agents.loop_thread.hinted_consumer`` gives every loop): it
runs whenever the loop asks for records, and the loop keeps the same object.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from streams.admin import broker_answers

__all__ = ["GroupWatch", "WatchedConsumer", "close_in_background", "rejoin_limit_s"]

log = logging.getLogger(__name__)

_PROBE_S = 5.0


def rejoin_limit_s() -> float:
    """``SLUICE_WORKER_REJOIN_TIMEOUT`` (seconds, default 60): how long a worker loop's
    consumer may stay out of its group while the broker answers before it is replaced."""
    return float(os.environ.get("SLUICE_WORKER_REJOIN_TIMEOUT", "60"))


class GroupWatch:
    """Says when a loop's group consumer should be replaced (module docstring)."""

    def __init__(self, what: str, bootstrap: str, limit_s: float, *,
                 probe: Callable[[], bool] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 symptom: str = "out of its group") -> None:
        self.what = what
        self.limit_s = limit_s
        self.symptom = symptom
        self._probe = probe or (lambda: broker_answers(bootstrap, _PROBE_S))
        self._clock = clock
        self._out_since: float | None = None
        self._next_probe = 0.0

    def stuck(self, reader: Any) -> bool:
        """Whether ``reader`` has been out of its group for ``limit_s`` while the broker
        answers a new client (probed at most once every ``limit_s``)."""
        return self.lasting(not reader.memberid())

    def lasting(self, out: bool) -> bool:
        """Whether a client whose last sign is ``out`` (no member id, a failed commit or
        read) has been out for ``limit_s`` while the broker answers a new client (probed at
        most once every ``limit_s``); ``False`` resets it. What :meth:`stuck` asks, for a
        client that has no member id to show (``agents.intake_progress``,
        ``projections.notifications``, ``projections.metrics``)."""
        now = self._clock()
        if not out:
            self._out_since = None
            return False
        if self._out_since is None:
            self._out_since = now
            return False
        out_s = now - self._out_since
        if out_s < self.limit_s or now < self._next_probe:
            return False
        self._next_probe = now + self.limit_s
        if not self._probe():  # the broker is away: a new consumer would do no better
            return False
        log.warning("%s: %s for %.0f s while the broker answers (librdkafka lost its "
                    "brokers after a stall?): replacing it", self.what, self.symptom, out_s)
        self._out_since = None
        return True


def close_in_background(reader: Any, what: str) -> None:
    """Close a replaced consumer on a daemon thread: a consumer cut off from every broker
    waits in ``close`` for commits that cannot complete, and must not hold its loop."""

    def close() -> None:
        try:
            reader.close()
        except Exception as exc:
            log.info("%s: closing the replaced consumer: %s", what, exc)

    threading.Thread(target=close, name="close-replaced", daemon=True).start()


class WatchedConsumer:
    """A group consumer that replaces the librdkafka consumer it wraps when :class:`GroupWatch`
    says so, subscribing the new one as the old one was; everything else is the wrapped
    consumer's. The rebalance callbacks are given the wrapped consumer, as librdkafka gives
    them. On replacement the revocation callback is run for what the old one still held (a
    lost assignment's cleanup), then the old one is closed in the background."""

    def __init__(self, make: Callable[[], Any], watch: GroupWatch) -> None:
        self._make, self._watch = make, watch
        self._inner = make()
        self._subscription: tuple[list[str], dict[str, Any]] | None = None

    def subscribe(self, topics: list[str], **callbacks: Any) -> None:
        self._subscription = (list(topics), callbacks)
        self._inner.subscribe(topics, **callbacks)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> Any:
        if self._subscription is not None and self._watch.stuck(self._inner):
            self._replace()
        return self._inner.consume(num_messages=num_messages, timeout=timeout)

    def _replace(self) -> None:
        assert self._subscription is not None
        topics, callbacks = self._subscription
        old = self._inner
        revoke = callbacks.get("on_lost") or callbacks.get("on_revoke")
        try:
            held = old.assignment()
        except Exception:  # a consumer cut off may refuse even this
            held = []
        if held and revoke is not None:
            revoke(old, held)
        close_in_background(old, self._watch.what)
        self._inner = self._make()
        self._inner.subscribe(topics, **callbacks)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
