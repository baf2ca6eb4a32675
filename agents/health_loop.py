"""The health agent's loop: ``sluice.heartbeats`` read by confluent-kafka, on one thread.

One thread (started and stopped with the worker's faust app, as the intake's and the shard's:
``agents.loop_thread``) owns a consumer of the heartbeats, a producer, the health table
(:class:`agents.health_store.HealthStore`) and the :class:`agents.health.HealthAgent`. In
order, for ever:

1. ``consume`` waits for heartbeats until the next deadline check is due (every
   ``check_interval_s``: a second at the default timeout), then takes what was fetched;
2. each heartbeat goes to the agent (an unreadable record or garbage becomes a dead letter,
   delivered before the loop goes on), and the table learns how far each partition is read;
3. when due, the agent checks the deadlines (its reports and probes are produced without a
   wait: librdkafka delivers them), and the table's changes are written to its database.

It was a faust agent with a faust table; faust's machinery (its fetcher's thread hand-offs,
the table's changelog writes through aiokafka, commits) cost an idle worker most of its CPU
for 64 nodes' heartbeats (issue 17).

**Ownership and where a partition resumes.** The consumer is in a group of its own
(``<prefix>-worker-health``, cooperative sticky: one owner a partition); its rebalance
callbacks run inside ``consume``, on this thread. A partition assigned here is read from the
table's own position for it (``<home>/worker/health.db``; its beginning when the table has
none: the heartbeats topic is compacted and keyed by node, so it is the table's log). The
heartbeats up to the group's committed offset (committed each second after they were handled;
where the group has none, that of faust's group ``<prefix>-worker``, which handled them before
this loop existed) were handled by an owner before; they are only **folded** into the table, as
faust restored its table from the changelog; from there on each is handled (forwarded, judged),
and a partition nobody handled is handled from its beginning, as faust's agent did with a new
group. Revoked partitions leave the watch; a new owner
judges nobody before a full timeout of its own sight (``agents.health_watch``, rule 1).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from agents.auth.seal import seal_headers, worker_secret
from agents.batch_sender import BatchedSender, intake_producer
from agents.fetch_guard import dead_letter_for
from agents.forwarding import Outgoing, dead_letter
from agents.health import PROBE_NAME, HealthAgent, node_timeout_s, read_heartbeat
from agents.health_clock import clock_ahead_beats
from agents.health_store import HealthStore, health_store_path
from agents.intake_messages import IntakeMessages, sort_requests
from agents.loop_thread import hinted_consumer
from agents.offset_hints import seek_past, store_hints
from agents.routing import ShardRouter
from schemas import encode
from streams.clients import consumer, ready_messages
from streams.kafka_native import Consumer, KafkaException, Producer, TopicPartition
from streams.rocks import set_aside
from streams.settings import Settings
from streams.stale_store import past_the_end
from streams.topics import Topics

__all__ = ["HealthLoop", "health_loop"]

log = logging.getLogger(__name__)

OFFSET_BEGINNING = -2
"""librdkafka's "the partition's first offset" (``confluent_kafka.OFFSET_BEGINNING``)."""
_BATCH = 1000


def health_loop(settings: Settings, *, session_timeout_s: float) -> HealthLoop:
    """The worker's health loop, wired."""
    return HealthLoop(
        settings, timeout_s=node_timeout_s(),
        make_consumer=lambda: hinted_consumer(
            settings.bootstrap, f"{settings.prefix}-worker-health", session_timeout_s),
        make_producer=lambda: intake_producer(settings.bootstrap),
        make_table=lambda: health_table(settings),
        make_legacy=lambda: consumer(settings.bootstrap, group=f"{settings.prefix}-worker"))


def health_table(settings: Settings) -> HealthStore:
    """The health table, set aside first when it was folded from another heartbeats topic
    (its positions past the end of the broker's: ``streams.stale_store``)."""
    path = health_store_path(settings.home)
    table = HealthStore(path)
    ahead = past_the_end(settings.bootstrap, {Topics(settings).heartbeats: table.positions()})
    if not ahead or not path.exists():
        return table
    table.close()
    set_aside(path, f"past the end of the broker's heartbeats: {'; '.join(ahead)}: folded "
              "from another topic (a broker or its topics reset?)", kind="stale")
    return HealthStore(path)


class HealthLoop:
    """The health thread's state and loop (module docstring)."""

    def __init__(self, settings: Settings, *, timeout_s: float,
                 make_consumer: Callable[[], Consumer], make_producer: Callable[[], Producer],
                 make_table: Callable[[], HealthStore],
                 make_legacy: Callable[[], Consumer] | None = None) -> None:
        self.settings = settings
        self.topics = Topics(settings)
        self.stopping = threading.Event()
        self.timeout_s = timeout_s
        self._make_consumer = make_consumer
        self._make_producer = make_producer
        self._make_table = make_table
        self._make_legacy = make_legacy
        self._router = ShardRouter(settings)
        self._secret = worker_secret(settings.home)
        self._fold_until: dict[int, int] = {}
        self._skipped: dict[int, int] = {}
        self._out: Producer | None = None
        self.agent: HealthAgent | None = None

    def run(self) -> None:
        """Read, handle and check until :attr:`stopping` is set; then leave the group."""
        table = self._make_table()
        self._out = self._make_producer()
        self.agent = HealthAgent(table, self.timeout_s, time.time(), self._send, self._probe,
                                 command_ttl_s=self.settings.command_ttl_s,
                                 clock_ahead_beats=clock_ahead_beats())
        letters = BatchedSender(self._make_producer)
        loop = asyncio.new_event_loop()
        reader = self._make_consumer()
        reader.subscribe([self.topics.heartbeats], on_assign=self._on_assign,
                         on_revoke=self._on_revoke, on_lost=self._on_revoke)
        interval_s = self.agent.interval_s
        next_check = time.monotonic() + interval_s
        try:
            while not self.stopping.is_set():
                wait_s = min(1.0, max(0.0, next_check - time.monotonic()))
                messages = ready_messages(reader, _BATCH, wait_s)
                if messages:
                    self._handle(loop, letters, reader, messages)
                now = time.monotonic()
                if now >= next_check:
                    self.agent.check(int(time.time() * 1000))
                    table.persist()
                    next_check = max(next_check + interval_s, now)
                self._out.poll(0)
        finally:
            try:
                reader.close()
            except Exception:
                log.exception("closing the heartbeats consumer failed")
            self._out.flush(10)
            table.close()
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    def _handle(self, loop: asyncio.AbstractEventLoop, letters: BatchedSender,
                reader: Consumer, messages: list[Any]) -> None:
        agent = self.agent
        assert agent is not None
        topic = self.topics.heartbeats
        batch = sort_requests(messages, topic, agent.owned)
        for error in batch.errors:
            log.warning("health: %s", error)
        now_ms = int(time.time() * 1000)
        dead: list[Outgoing] = []
        for record in batch.records:
            letter = dead_letter_for(topic, self.topics.dead_letters, record)
            if letter is not None:  # an unreadable batch of heartbeats
                dead.append(letter)
                continue
            beat = read_heartbeat(record.value)
            if record.offset < self._fold_until.get(record.partition, -1):
                if not isinstance(beat, str):
                    agent.fold(beat, record.partition, now_ms)
                continue
            if isinstance(beat, str):  # garbage or another record: a dead letter, as intake's
                log.warning("undecodable heartbeat: %s", beat)
                dead.append(dead_letter(
                    self.topics.dead_letters, source_topic=topic, partition=record.partition,
                    offset=record.offset, key=record.key, value=record.value or b"",
                    error=beat))
                continue
            agent.heard(beat, record.partition, now_ms)
        if dead:
            loop.run_until_complete(letters.deliver_until_done(dead))
        for partition, offset in batch.next_offsets.items():
            if partition in agent.owned:
                agent.table.advance(partition, offset)
        self._store_hints(reader, batch)
        self._seek_past(reader, batch)

    # -- sending ------------------------------------------------------------------------------

    def _send(self, kind: str, name: str, record: dict[str, Any]) -> None:
        """``record`` into the shard of node ``name``, sealed: only the health agent may send
        these."""
        assert self._out is not None
        value = encode(kind, record)
        headers = seal_headers(self._secret, "health", int(record["time_ms"]), value)
        for shard in self._router.shards_for("RegisterNode", {"name": name}):
            self._produce(self.topics.shard_inbox, self.settings.shard_name(shard).encode(),
                          value, shard, headers)

    def _probe(self, partition: int, value: bytes) -> None:
        self._produce(self.topics.heartbeats, PROBE_NAME.encode(), value, partition, None)

    def _produce(self, topic: str, key: bytes, value: bytes, partition: int,
                 headers: Any) -> None:
        assert self._out is not None
        while True:
            try:
                self._out.produce(topic, value, key, partition=partition, headers=headers,
                                  on_delivery=_delivered)
                return
            except BufferError:  # librdkafka's local queue is full: let it drain
                self._out.poll(0.05)
            except KafkaException as exc:
                log.warning("health: a record to %s[%d] not sent: %s", topic, partition, exc)
                return

    # -- ownership ----------------------------------------------------------------------------

    def _on_assign(self, reader: Consumer, partitions: list[TopicPartition]) -> None:
        """The group gave this worker ``partitions``: read each from the table's position,
        folding up to what an owner handled before (module docstring)."""
        agent = self.agent
        assert agent is not None
        topic = self.topics.heartbeats
        mine = sorted(tp.partition for tp in partitions if tp.topic == topic)
        committed = self._committed(reader, mine)
        starts = []
        for tp in partitions:
            if tp.topic != topic:
                starts.append(tp)
                continue
            p = tp.partition
            self._skipped.pop(p, None)
            position = agent.table.position(p)
            handled = committed.get(p)
            self._fold_until[p] = handled if handled is not None else -1
            start = position if position is not None else OFFSET_BEGINNING
            starts.append(TopicPartition(topic, p, start))
        log.info("heartbeat partitions assigned: %s (read from %s, folded up to %s)", mine,
                 [tp.offset for tp in starts if tp.topic == topic],
                 [self._fold_until[p] for p in mine])
        reader.incremental_assign(starts)
        agent.assigned(mine)

    def _committed(self, reader: Consumer, partitions: list[int]) -> dict[int, int]:
        """The group's committed offset of each partition that has one (nothing if the broker
        cannot say)."""
        found = self._committed_by(reader, partitions)
        missing = [p for p in partitions if p not in found]
        if missing and self._make_legacy is not None:  # faust's group handled them before
            legacy = self._make_legacy()
            try:
                found |= self._committed_by(legacy, missing)
            finally:
                legacy.close()
        return found

    def _committed_by(self, reader: Consumer, partitions: list[int]) -> dict[int, int]:
        if not partitions:
            return {}
        tps = [TopicPartition(self.topics.heartbeats, p) for p in partitions]
        try:
            found = reader.committed(tps, timeout=10)
        except KafkaException as exc:
            log.warning("health: committed offsets of %s not read: %s", partitions, exc)
            return {}
        return {tp.partition: int(tp.offset) for tp in found if int(tp.offset) >= 0}

    def _on_revoke(self, reader: Consumer, partitions: list[TopicPartition]) -> None:
        """``partitions`` are no longer this worker's (revoked, or the session was lost)."""
        agent = self.agent
        assert agent is not None
        mine = sorted(tp.partition for tp in partitions if tp.topic == self.topics.heartbeats)
        log.info("heartbeat partitions revoked: %s", mine)
        agent.revoked(mine)
        agent.table.persist()
        for p in mine:
            self._fold_until.pop(p, None)
        try:
            reader.incremental_unassign(partitions)
        except KafkaException as exc:  # the consumer is closing, or the assignment is gone
            log.info("health: unassigning %s: %s", mine, exc)

    # -- offsets ------------------------------------------------------------------------------

    def _store_hints(self, reader: Consumer, batch: IntakeMessages) -> None:
        assert self.agent is not None
        store_hints(reader, self.topics.heartbeats, batch.next_offsets, self.agent.owned, "health")

    def _seek_past(self, reader: Consumer, batch: IntakeMessages) -> None:
        assert self.agent is not None
        seek_past(reader, self.topics.heartbeats, batch.skip, self.agent.owned, self._skipped,
                  "health")


def _delivered(error: Any, message: Any) -> None:
    if error is not None:
        log.warning("health: a record to %s[%s] not delivered: %s", message.topic(),
                    message.partition(), error)
