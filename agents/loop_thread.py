"""What the worker's two confluent-kafka loops share (the shard loop, ``agents.shard_loop``,
and the intake's, ``agents.intake_loop``): a consumer in a group of its own whose committed
offsets are only hints, and the ``mode.Service`` that runs a loop on its own thread with the
faust app's lifecycle.

The service starts the thread when the app has started and, when the app stops, sets the
loop's ``stopping`` and waits (up to a minute) until it has finished its batch and left its
group. A loop that dies of an unexpected error crashes the worker (its supervisor restarts
it) rather than leave it running without the part the loop is.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol, cast

from mode import Service

from agents.group_watch import GroupWatch, WatchedConsumer, rejoin_limit_s
from streams.clients import consumer
from streams.kafka_native import Consumer

__all__ = ["OFFSET_STORED", "Loop", "LoopService", "hinted_consumer", "install_loop"]

log = logging.getLogger(__name__)

OFFSET_STORED = -1000
"""librdkafka's "the committed offset" (``confluent_kafka.OFFSET_STORED``)."""


def hinted_consumer(bootstrap: str, group: str, session_timeout_s: float) -> Consumer:
    """A consumer of ``group``: cooperative-sticky (one owner a partition), offsets stored by
    the loop after a batch and committed as a hint only, corrupt batches reported as errors;
    replaced when librdkafka has left it out of its group for good (``agents.group_watch``)."""
    watch = GroupWatch(f"{group} consumer", bootstrap, rejoin_limit_s())
    return cast(Consumer, WatchedConsumer(
        lambda: _group_consumer(bootstrap, group, session_timeout_s), watch))


def _group_consumer(bootstrap: str, group: str, session_timeout_s: float) -> Consumer:
    return consumer(bootstrap, group=group, overrides={
        "partition.assignment.strategy": "cooperative-sticky",
        "session.timeout.ms": int(session_timeout_s * 1000),
        "heartbeat.interval.ms": int(max(0.5, session_timeout_s / 5) * 1000),
        "enable.partition.eof": False,
        "enable.auto.commit": True,          # commits what store_offsets stored: a hint only
        "enable.auto.offset.store": False,
        "auto.commit.interval.ms": 1000,
        "check.crcs": True,                  # a corrupt batch is an error message, not garbage
        # a cold rebuild on assignment, or a batch waiting out a broker outage, may take minutes
        "max.poll.interval.ms": 600_000,
    })


class Loop(Protocol):
    """A loop run on a thread until its ``stopping`` is set."""

    stopping: threading.Event

    def run(self) -> None: ...


class LoopService(Service):
    """A loop's thread as a service of the app (one subclass a loop: :func:`install_loop`)."""

    thread_name = "loop"
    make: Callable[[], Loop]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.loop_state = type(self).make()
        self._thread: threading.Thread | None = None

    async def on_start(self) -> None:
        loop = asyncio.get_running_loop()
        name = self.thread_name

        def run() -> None:
            try:
                self.loop_state.run()
            except BaseException as exc:
                if not self.loop_state.stopping.is_set():
                    log.exception("the %s loop failed; the worker stops", name)
                    asyncio.run_coroutine_threadsafe(self.crash(exc), loop)

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    async def on_stop(self) -> None:
        self.loop_state.stopping.set()
        thread = self._thread
        if thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, thread.join, 60)


def install_loop(app: Any, name: str, make: Callable[[], Loop]) -> None:
    """Register on ``app`` a service that runs ``make()``'s loop on a thread named ``name``
    (a subclass of its own, made with ``type``: mode keys a service class's tasks by its
    qualified name, fixed when the class is made)."""
    service = type(f"{name.capitalize()}LoopService", (LoopService,),
                   {"thread_name": name, "make": staticmethod(make)})
    app.service(service)
