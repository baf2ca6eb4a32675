"""Node health: heartbeats in, ``NodeFailed`` into the node's shard when one is missed.

Each node daemon heartbeats on ``sluice.heartbeats`` (keyed by node SLUID). This agent keeps the
last heartbeat of every node in a faust table (RocksDB, co-partitioned with the heartbeats), and
a timer on every worker checks the nodes of the partitions it owns: a node silent for longer
than ``SLUICE_NODE_TIMEOUT`` seconds (default 10; Slurm's SlurmdTimeout is 300) is reported
with a ``NodeFailed`` request into its shard's inbox, and again every 30 s while it stays
silent (so a silent node an operator resumed goes DOWN again). The core decides what that means
(the node goes DOWN, its runs end NODE_FAIL, expedited requeue starts); a heartbeat after that
re-arms the detector. Reporting twice is harmless: the core ignores a NodeFailed for a node that
is already down. After a worker (re)start, nobody is judged for one timeout, so the stream can
catch up on the heartbeats that arrived while it was away.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

from agents.routing import ShardRouter
from schemas import DecodeError, decode, encode

if TYPE_CHECKING:
    from agents.app import WorkerContext

__all__ = ["DEFAULT_TIMEOUT_S", "install_health"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0
CHECK_INTERVAL_S = 0.5
REPORT_AGAIN_S = 30.0


def install_health(context: WorkerContext) -> None:
    """Register the heartbeat agent, its table and the deadline timer."""
    app, settings = context.app, context.settings
    timeout_s = float(os.environ.get("SLUICE_NODE_TIMEOUT", DEFAULT_TIMEOUT_S))
    router = ShardRouter(settings)
    heartbeats = app.topic(context.topics.heartbeats, key_type=bytes, value_type=bytes,
                           key_serializer="raw", value_serializer="raw")
    last_seen = app.Table(
        "node-last-heartbeat", default=None, partitions=settings.partitions,
        key_type=str,
        options={"block_cache_size": 16 * 1024 * 1024, "write_buffer_size": 4 * 1024 * 1024},
    )
    reported: dict[str, float] = {}
    # After a (re)start the table holds heartbeats from before it: give the stream one timeout
    # to catch up before judging anyone, or every node would look silent at once.
    armed_at = time.monotonic() + timeout_s

    @app.agent(heartbeats, name="node-health")
    async def node_health(stream: Any) -> None:
        async for event in stream.events():
            try:
                _name, beat = decode(event.value)
            except DecodeError as exc:
                log.warning("undecodable heartbeat: %s", exc)
                continue
            node = beat["node_sluid"]
            last_seen[node] = {"name": beat["name"], "seen_ms": int(time.time() * 1000)}
            reported.pop(node, None)

    @app.timer(CHECK_INTERVAL_S, name="node-deadlines")  # type: ignore[untyped-decorator]
    async def check_deadlines() -> None:
        if time.monotonic() < armed_at:
            return
        now_ms = int(time.time() * 1000)  # the shell's clock; the core only sees the record
        for node, entry in list(last_seen.items()):
            if entry is None:
                continue
            if node in reported and now_ms - reported[node] < REPORT_AGAIN_S * 1000:
                continue
            silent_s = (now_ms - entry["seen_ms"]) / 1000
            if silent_s < timeout_s:
                continue
            reported[node] = now_ms
            record = {"node_sluid": node, "name": entry["name"],
                      "reason": f"no heartbeat for {silent_s:.1f} s", "time_ms": now_ms}
            log.warning("node %s (%s) missed its heartbeat deadline", entry["name"], node)
            for shard in router.shards_for("RegisterNode", {"name": entry["name"]}):
                await context.inbox.send(
                    key=settings.shard_name(shard).encode(), value=encode("NodeFailed", record),
                    partition=shard,
                )
