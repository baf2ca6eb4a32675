"""The shard scheduler in the worker: the shard loop's thread, started and stopped with the app.

The shard inbox is not a faust stream: :class:`~agents.shard_loop.ShardLoop` reads it in
batches with confluent-kafka on a thread of its own, where its runners, their RocksDB stores
and the standbys live (see that module for the loop, ownership and failover). This module ties
the thread to the faust app's lifecycle: a ``mode.Service`` starts it when the app has started
and, when the app stops, asks it to stop and waits until it has left its consumer group and
closed every store. A loop that dies of an unexpected error crashes the worker (its
supervisor restarts it) rather than leave it running without its shards.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agents.loop_thread import install_loop
from agents.shard_loop import ShardLoop

if TYPE_CHECKING:
    from agents.app import WorkerContext

__all__ = ["install_shard_agent"]


def install_shard_agent(context: WorkerContext, batch_max: int,
                        session_timeout_s: float = 10.0) -> None:
    """Register the shard loop's service on the worker's app."""
    interval = float(os.environ.get("SLUICE_STANDBY_INTERVAL", "1.0"))
    if os.environ.get("SLUICE_STANDBY", "1") == "0":
        interval = 0.0
    settings = context.settings

    install_loop(context.app, "shard", lambda: ShardLoop(
        settings, batch_max=batch_max, session_timeout_s=session_timeout_s,
        standby_interval_s=interval))
