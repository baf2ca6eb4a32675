"""Node health: heartbeats in; ``NodeFailed`` and ``NodeResponding`` into the node's shard.

Each node daemon heartbeats on ``sluice.heartbeats`` (keyed by node SLUID). This agent keeps the
last heartbeat of every node in a faust table (RocksDB, co-partitioned with the heartbeats), and
a timer on every worker checks the nodes of the partitions it owns with a
:class:`agents.health_watch.HealthWatch`, which holds the rules:

- a node silent for ``SLUICE_NODE_TIMEOUT`` seconds (default 10; Slurm's SlurmdTimeout is 300)
  is reported with ``NodeFailed`` (carrying how many of the watched nodes were silent in the
  same check, for the core's mass-failure guard), and again every 30 s while it stays silent;
- silence is counted only over time the agent could see: after its own stall (a tick late by
  half a timeout), a start or failover (entries it has not watched before), or a blind spell
  (nothing, not even the probe it sends itself through each heartbeat partition it owns, came
  through the topic for half a timeout: a broker outage), it waits one full timeout of fresh
  heartbeats before judging anyone;
- a heartbeat from a node it reported, or after a silence longer than the timeout, is forwarded
  as ``NodeResponding`` (with the runs the heartbeat lists): the core decides whether the node
  returns to service (``ReturnToService``) and kills runs it no longer holds there;
- so is a heartbeat listing a run stuck after its exit, and every node's heartbeat at least
  every ``SLUICE_RUNS_RECONCILE_S`` (:class:`agents.health_runs.RunsForwarding`): the core ends
  the runs it holds there that the node no longer runs (``scheduler.nodes.missing_runs``).

A record on the heartbeats topic that is not a ``NodeHeartbeat`` (garbage, truncated, another
record) goes to the dead letters with its reason (:func:`read_heartbeat`), as the intake's do.

The core decides what a report means (DOWN and NODE_FAIL, or ``NodeSuspected``); reporting twice
is harmless: the core ignores a NodeFailed for a node that is already down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from agents.auth.seal import seal_headers, worker_secret
from agents.fetch_guard import dead_letter_for
from agents.forwarding import DurableSender, dead_letter
from agents.health_runs import RunsForwarding, reconcile_s
from agents.health_seen import MISSING, SeenNodes
from agents.health_watch import (
    DEFAULT_TIMEOUT_S,
    CheckResult,
    HealthWatch,
    check_interval_s,
    node_timeout_s,
    store_due,
)
from agents.metrics import observe_health
from agents.routing import ShardRouter
from schemas import DecodeError, decode, encode

if TYPE_CHECKING:
    from agents.app import WorkerContext

__all__ = ["DEFAULT_TIMEOUT_S", "install_health", "node_timeout_s", "read_heartbeat"]

log = logging.getLogger(__name__)

PROBE_NAME = "sluice-health-probe"
"""The ``name`` of the agent's own probe on the heartbeat topic (its ``node_sluid`` is "")."""


def read_heartbeat(value: Any) -> dict[str, Any] | str:
    """The ``NodeHeartbeat`` in ``value``, or why it is none (a dead letter's reason)."""
    if not isinstance(value, bytes):
        return "EmptyRecord: the record has no value"
    try:
        name, beat = decode(value)
    except DecodeError as exc:
        return f"Undecodable: {exc}"
    if name != "NodeHeartbeat":
        return f"NotAHeartbeat: a {name} on the heartbeats topic"
    return beat


def install_health(context: WorkerContext) -> None:  # noqa: PLR0915 - one wiring of three agents
    """Register the heartbeat agent, its table and the deadline timer."""
    app, settings = context.app, context.settings
    router = ShardRouter(settings)
    heartbeats = app.topic(context.topics.heartbeats, key_type=bytes, value_type=bytes,
                           key_serializer="raw", value_serializer="raw")
    last_seen = app.Table(
        "node-last-heartbeat", default=None, partitions=settings.partitions,
        key_type=str,
        options={"block_cache_size": 16 * 1024 * 1024, "write_buffer_size": 4 * 1024 * 1024},
    )
    watch = HealthWatch(node_timeout_s(), started_s=time.time())
    refresh_ms = int(watch.timeout_s * 1000 / 2)
    interval_s = check_interval_s(watch.timeout_s)
    seen = SeenNodes(reload_every=round(watch.timeout_s / 2 / interval_s))  # health_seen.py
    runs_sync = RunsForwarding(stuck_s=watch.timeout_s, again_s=watch.timeout_s,
                               reconcile_s=reconcile_s(watch.timeout_s))  # health_runs.py

    secret = worker_secret(settings.home)

    async def send(kind: str, name: str, record: dict[str, Any]) -> None:
        value = encode(kind, record)  # sealed: only the health agent may send these
        headers = seal_headers(secret, "health", int(record["time_ms"]), value)
        for shard in router.shards_for("RegisterNode", {"name": name}):
            await context.inbox.send(
                key=settings.shard_name(shard).encode(), value=value, partition=shard,
                headers=headers,
            )

    async def _probe(now_ms: int, watched: Iterable[int]) -> None:
        """Send the agent's probe into the heartbeat partitions it owns that need one (those
        where a watched node fell quiet, or one when nothing came through for a while: see
        health_watch, rule 0)."""
        value = encode("NodeHeartbeat", {"node_sluid": "", "name": PROBE_NAME,
                                         "time_ms": now_ms, "runs": []})
        owned = [tp.partition for tp in app.consumer.assignment()
                 if tp.topic == context.topics.heartbeats]
        for partition in watch.probe_partitions(owned, watched, now_ms / 1000):
            try:
                await heartbeats.send(key=PROBE_NAME.encode(), value=value, partition=partition)
            except Exception as exc:
                log.debug("health probe not sent: %s", exc)

    @app.agent(heartbeats, name="node-health")
    async def node_health(stream: Any) -> None:
        sender = DurableSender(app.producer)
        async for event in stream.events():
            letter = dead_letter_for(event.message.topic, context.topics.dead_letters,
                                     event.message)
            if letter is not None:  # an unreadable batch of heartbeats
                await sender.deliver_until_done([letter])
                continue
            beat = read_heartbeat(event.value)
            if isinstance(beat, str):  # garbage or another record: a dead letter, as intake's
                log.warning("undecodable heartbeat: %s", beat)
                message = event.message
                await sender.deliver_until_done([dead_letter(
                    context.topics.dead_letters, source_topic=message.topic,
                    partition=message.partition, offset=message.offset,
                    key=event.key if isinstance(event.key, bytes) else None,
                    value=event.value if isinstance(event.value, bytes) else b"",
                    error=beat)])
                continue
            node, name, runs, exited = (beat["node_sluid"], beat["name"], list(beat["runs"]),
                                        list(beat.get("exited") or ()))
            now_ms = int(time.time() * 1000)
            partition = int(event.message.partition)
            if not node:
                if name == PROBE_NAME:
                    watch.probe_heard(now_ms / 1000, partition, int(beat["time_ms"]) / 1000)
                continue  # a heartbeat needs a node SLUID
            stored = seen.stored(node)
            if stored is MISSING:  # not read since the assignment changed
                stored = last_seen.get(node)
                seen.wrote(node, stored)
            assert stored is None or isinstance(stored, dict)
            sent_ms = min(int(beat["time_ms"]), now_ms)  # when the node was alive, by its clock
            previous_ms = seen.heard(node, sent_ms)
            previous_s = previous_ms / 1000 if previous_ms is not None else None
            if store_due(stored, name, partition, sent_ms, refresh_ms):
                entry = {"name": name, "seen_ms": sent_ms, "partition": partition}
                last_seen[node] = entry
                seen.wrote(node, entry)
            answers = watch.heard(node, previous_s, now_ms / 1000, sent_ms / 1000, partition)
            if answers:
                log.info("node %s (%s) answers again", name, node)
            due = runs_sync.due(node, exited, now_ms / 1000)  # first: it tracks `exited`
            if answers or due:
                if due and not answers:
                    log.debug("node %s (%s): forwarding its runs (%d, %d exited)", name, node,
                              len(runs), len(exited))
                runs_sync.forwarded(node, now_ms / 1000)
                await send("NodeResponding", name, {
                    "node_sluid": node, "name": name, "runs": runs, "exited": exited,
                    "time_ms": now_ms, "sent_ms": sent_ms, "answers": answers})

    @app.on_partitions_assigned.connect  # type: ignore[arg-type]
    async def on_assigned(_app: Any, _assigned: set[Any], **_: Any) -> None:
        seen.forget()
        runs_sync.forget()

    @app.on_partitions_revoked.connect  # type: ignore[arg-type]
    async def on_revoked(_app: Any, _revoked: set[Any], **_: Any) -> None:
        seen.forget()
        runs_sync.forget()

    @app.timer(interval_s, name="node-deadlines")  # type: ignore[untyped-decorator]
    async def check_deadlines() -> None:
        now_ms = int(time.time() * 1000)  # the shell's clock; the core only sees the record
        if seen.reload_due():
            seen.reload(list(last_seen.items()))
        entries, partitions = seen.entries()
        was_blind = watch.blind
        result = watch.check(entries, now_ms / 1000, partitions)
        _log_check(result, watch.timeout_s, was_blind=was_blind)
        await _probe(now_ms, watch.quiet_partitions(entries, now_ms / 1000, partitions))
        for silent in result.report:
            record = {"node_sluid": silent.node_sluid, "name": silent.name,
                      "reason": f"no heartbeat for {silent.silent_s:.1f} s", "time_ms": now_ms,
                      "silent_nodes": result.silent, "watched_nodes": result.watched}
            log.warning("node %s (%s) missed its heartbeat deadline (%d of %d nodes silent)",
                        silent.name, silent.node_sluid, result.silent, result.watched)
            await send("NodeFailed", silent.name, record)


def _log_check(result: CheckResult, timeout_s: float, *, was_blind: bool) -> None:
    observe_health(result.silent, result.watched, blind=result.blind)
    if result.blind and not was_blind:
        log.warning("health agent is blind: nothing came through the heartbeat topic for %.1f s "
                    "(broker or consumer); judging nobody until it does", timeout_s / 2)
    elif was_blind and not result.blind:
        log.warning("health agent sees again: judging nobody for %.1f s", timeout_s)
    if result.stalled_s:
        log.warning("health agent stalled %.1f s: judging nobody for %.1f s", result.stalled_s,
                    timeout_s)
    if result.report and result.silent >= 2:
        log.warning("%d of %d watched nodes silent at once: a suspected partition if more than "
                    "NodeFailureGuardShare", result.silent, result.watched)

