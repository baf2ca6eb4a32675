"""The worker's faust app without the timers Sluice does not need (agents.quiet_faust, issue 17):
its consumer is the quiet one, its aiokafka client holds fetches and polls less, its
heartbeats are a third of the session, and its commit timer runs once a minute."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agents.app import create_app
from agents.quiet_faust import (
    DRAIN_WAIT_S,
    FETCH_WAIT_MS,
    FETCHER_POLL_S,
    KEEPALIVE_S,
    QuietApp,
    QuietConsumer,
    QuietConsumerThread,
)
from streams.settings import Settings


def test_the_worker_app_uses_the_quiet_consumer_and_its_settings(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path, bootstrap="127.0.0.1:1", prefix="q"))
    assert isinstance(app, QuietApp)
    assert app.transport.Consumer is QuietConsumer
    assert app.conf.broker_session_timeout == 10.0
    assert app.conf.broker_heartbeat_interval == 10.0 / 3
    assert app.conf.broker_commit_interval == 60.0


def test_the_quiet_consumer_thread_makes_a_quieter_aiokafka_consumer(tmp_path: Path) -> None:
    async def made() -> tuple[int, float]:
        app = QuietApp("q-test", broker="kafka://127.0.0.1:1", datadir=str(tmp_path))
        consumer = app.consumer
        assert isinstance(consumer, QuietConsumer)
        thread = consumer._thread
        assert isinstance(thread, QuietConsumerThread)
        client = thread._create_worker_consumer(app.transport)
        return client._fetch_max_wait_ms, client._consumer_timeout

    assert asyncio.run(made()) == (FETCH_WAIT_MS, FETCHER_POLL_S)


def test_a_getmany_of_the_quiet_consumer_waits_long(tmp_path: Path) -> None:
    asked: list[float] = []

    async def first(self: object, active: object, timeout: float) -> dict[object, object]:
        asked.append(timeout)
        return {}

    async def run() -> None:
        app = QuietApp("q-test", broker="kafka://127.0.0.1:1", datadir=str(tmp_path))
        consumer = app.consumer
        consumer._thread.getmany = first.__get__(consumer._thread)  # type: ignore[method-assign]
        await consumer._getmany(None, 1.0)

    asyncio.run(run())
    assert asked == [DRAIN_WAIT_S]
    assert KEEPALIVE_S > 1.1  # mode's own keepalives: 1 and 1.1 s
