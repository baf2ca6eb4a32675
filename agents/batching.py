"""Batches of stream events that do not wait when the system is idle.

faust's ``Stream.take_events(max, within)`` ends a batch when it is full or when a timer of
``within`` seconds fires, so on an idle system a lone request waits for the timer (on average
half of it, at each of the intake and the shard: most of an idle submit → start), and an idle
agent wakes ``1 / within`` times a second for nothing. :func:`take_ready` keeps its
contract (at most ``max_`` events a batch, each acknowledged only after the batch's consumer
is done with it) but ends a batch as soon as nothing more is waiting in the stream's queue:

- idle: the first event is a batch at once, and an empty stream sleeps without a timer;
- busy: everything that arrived while the previous batch was processed is the next batch
  (natural batching), up to ``max_``; ``within`` bounds how long a batch keeps growing
  while events trickle in one by one.

It follows faust 0.15's ``take_events`` (a stream processor fills the buffer; acks after the
batch), changing only when a batch ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["take_ready"]


class _Buffer:
    """The events of the batch being filled, and the signals between filler and consumer."""

    def __init__(self, stream: Any, max_: int, within: float) -> None:
        self.stream, self.max, self.within = stream, max_, within
        self.events: list[Any] = []
        self.ready = asyncio.Event()
        self.consumed = asyncio.Event()
        self.consuming: asyncio.Future[None] | None = None
        self.channel_it = stream.channel.__aiter__()
        self.loop = asyncio.get_running_loop()
        self.timer: asyncio.TimerHandle | None = None

    async def add(self, value: Any) -> Any:
        """The stream processor: buffer the current event; say when the batch is ready."""
        if self.consuming is not None:  # a batch is out: wait until it is done
            try:
                await self.consuming
            finally:
                self.consuming = None
        event = self.stream.current_event
        if event is None:
            raise RuntimeError("take_ready: an event without current_event")
        self.events.append(event)
        if len(self.events) >= self.max:
            self.ready.set()
            self.consumed.clear()
            await self.stream.wait(self.consumed)  # never more than max_ in one batch
        elif self.channel_it.empty():
            self.ready.set()
        elif self.timer is None:  # events keep coming: end the batch within ``within`` anyway
            self.timer = self.loop.call_later(self.within, self.ready.set)
        return value

    def take(self) -> list[Any]:
        """The ready batch; the filler waits until :meth:`done`."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.consuming = self.loop.create_future()
        return list(self.events)

    async def done(self) -> None:
        """Acknowledge the batch taken and let the filler go on."""
        for event in self.events:
            await self.stream.ack(event)
        self.events.clear()
        if self.consuming is not None and not self.consuming.done():
            self.consuming.set_result(None)
        self.ready.clear()
        self.consumed.set()


async def take_ready(stream: Any, max_: int, within: float) -> AsyncIterator[list[Any]]:
    """Yield lists of events from a faust ``stream``: a batch ends when ``max_`` events are
    buffered, or when the stream's queue is empty, or ``within`` seconds after its first event.
    """
    buffer = _Buffer(stream, max_, within)
    enable_acks = stream.enable_acks
    stream.enable_acks = False  # acked by done(), once the batch's consumer is finished
    stream.add_processor(buffer.add)
    stream._enable_passive(buffer.channel_it)
    try:
        while not stream.should_stop:
            await stream.wait_for_stopped(buffer.ready)
            if not buffer.events:
                buffer.ready.clear()
                continue
            try:
                yield buffer.take()
            finally:
                await buffer.done()
    finally:
        stream.enable_acks = enable_acks
        stream._processors.remove(buffer.add)
