"""faust as the worker uses it, without the wake-ups of the parts Sluice does not use (issue 17).

The worker's faust app consumes no records: the intake, the shard inbox and the heartbeats have
their own confluent-kafka readers (``agents.loop_thread``). faust is kept for the app's
lifecycle and for the clock's ``on_leader`` timer (``agents.clock``), whose leader is the member
of the worker's group that holds the one partition of faust's leader topic
(``<prefix>-worker-__assignor-__leader``), which nobody writes. What an idle faust did with it:

- its fetcher asked its consumer thread for records every second (``getmany(timeout=1.0)`` in
  ``Consumer._drain_messages``): a hop from the event loop to the thread and back each second.
  :class:`QuietConsumer` waits :data:`DRAIN_WAIT_S` a call instead. Nothing comes sooner for
  that (a record would end the wait at once; there are none), a rebalance cancels the wait as
  before (faust stops its fetcher), and aiokafka's ``max.poll.interval`` counts no idle time
  while a ``getmany`` waits (its ``fetcher_idle_time`` is 0 while a fetch waiter is out);
- aiokafka's fetcher sent a fetch for the leader partition every 1.5 s (``fetch_max_wait_ms``,
  fixed in faust's driver): :class:`QuietConsumerThread` lets the broker hold it
  :data:`FETCH_WAIT_MS`. The group's heartbeats and commits go through the coordinator's own
  connection, so a held fetch delays neither;
- aiokafka's fetch routine looked for work every 200 ms (``consumer_timeout_ms``) although
  every event it serves (a fetch's answer, an assignment, a resumed partition, new metadata)
  wakes it by a future: :data:`FETCHER_POLL_S`;
- mode's keepalives of the consumer thread woke it and the event loop every second
  (``ServiceThread._thread_keepalive`` and ``_keepalive2``: a cross-thread wake-up each, kept
  in case a method call to the thread were not seen, though each call wakes the thread's
  loop itself, ``call_soon_threadsafe``): every :data:`KEEPALIVE_S`;
- its monitor sampled rates every second that nothing reads (:class:`QuietMonitor`).

Not changed: the group's session timeout (a dead worker's clock moves to another worker after
it, as before) and faust's producer, through which the clock ticks.
"""

from __future__ import annotations

from typing import Any

import faust
from faust.sensors.monitor import Monitor
from faust.transport.drivers import aiokafka as aiokafka_driver
from faust.types import TP
from mode import Service

__all__ = ["DRAIN_WAIT_S", "FETCHER_POLL_S", "FETCH_WAIT_MS", "KEEPALIVE_S", "QuietApp",
           "QuietConsumer", "QuietMonitor"]

DRAIN_WAIT_S = 10.0
"""How long one ``getmany`` of faust's fetcher waits for records that never come (was 1 s)."""

FETCH_WAIT_MS = 10_000
"""How long the broker holds a fetch of the leader partition (faust's driver: 1,500 ms)."""

FETCHER_POLL_S = 5.0
"""How long aiokafka's fetch routine sleeps when no future wakes it (aiokafka: 0.2 s)."""

KEEPALIVE_S = 10.0
"""How often mode's keepalives wake the consumer thread and the event loop (mode: 1 and 1.1 s)."""


class QuietMonitor(Monitor):
    """faust's monitor without its sampler: nothing in Sluice reads the rates it computes, and
    its one-second timer woke an idle worker's event loop each second (issue 17)."""

    @Service.task
    async def _sampler(self) -> None:
        return


class QuietConsumerThread(aiokafka_driver.AIOKafkaConsumerThread):
    """faust's aiokafka consumer thread: its fetches held :data:`FETCH_WAIT_MS`, its fetch
    routine's and mode's keepalive timers longer."""

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # both read by AIOKafkaConsumer.start() when it makes its Fetcher
        consumer._fetch_max_wait_ms = FETCH_WAIT_MS
        consumer._consumer_timeout = FETCHER_POLL_S
        return consumer

    @Service.task
    async def _thread_keepalive(self) -> None:
        async for _sleep_time in self.itertimer(KEEPALIVE_S, name="thread_keepalive"):
            pass

    async def _keepalive2(self) -> None:
        while not self.should_stop:
            await self.sleep(KEEPALIVE_S)
            await self._wakeup_timer_in_thread()


class QuietConsumer(aiokafka_driver.Consumer):
    """faust's aiokafka consumer; each ``getmany`` waits :data:`DRAIN_WAIT_S`, not 1 s."""

    def _new_consumer_thread(self) -> aiokafka_driver.AIOKafkaConsumerThread:
        return QuietConsumerThread(self, loop=self.loop, beacon=self.beacon)

    async def _getmany(self, active_partitions: set[TP] | None, timeout: float) -> Any:
        return await super()._getmany(active_partitions, max(timeout, DRAIN_WAIT_S))


class QuietTransport(aiokafka_driver.Transport):
    """faust's aiokafka transport with :class:`QuietConsumer`."""

    Consumer = QuietConsumer


class QuietApp(faust.App):
    """``faust.App`` whose consumer is :class:`QuietConsumer` (the worker's brokers are always
    ``kafka://`` URLs, which faust serves with its aiokafka transport)."""

    def _new_transport(self) -> Any:
        return QuietTransport(self.conf.broker_consumer, self)
