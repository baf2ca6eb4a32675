"""The clock: one Tick a second into every shard, so time is data.

Time limits, begin times and requeue delays are decided from the time of the records the shard
applies; when nothing else happens, the Tick is that record. Only the leader worker ticks.
Each Tick is sealed (``agents.auth.seal``): the shard ignores ticks nobody in the worker wrote.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from agents.auth.seal import seal_headers, worker_secret
from scheduler.records import Tick
from scheduler.records.binary import encode_record

if TYPE_CHECKING:
    from agents.app import WorkerContext

__all__ = ["TICK_INTERVAL_S", "install_clock"]

TICK_INTERVAL_S = 1.0


def install_clock(context: WorkerContext) -> None:
    """Register the ticking timer on the worker's app."""
    app, settings = context.app, context.settings
    secret = worker_secret(settings.home)

    @app.timer(TICK_INTERVAL_S, on_leader=True, name="clock")  # type: ignore[untyped-decorator]
    async def tick() -> None:
        now_ms = int(time.time() * 1000)
        for index, shard in enumerate(settings.shard_names()):
            value = encode_record(Tick(shard=shard, time_ms=now_ms))
            await context.inbox.send(key=shard.encode(), value=value, partition=index,
                                     headers=seal_headers(secret, "clock", now_ms, value))
