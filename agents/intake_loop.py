"""The intake's loop: ``sluice.requests`` read in batches by confluent-kafka, on one thread.

One thread (started and stopped with the worker's faust app, ``agents.intake``) owns a
confluent-kafka consumer of the requests and the intake's batch handler
(:class:`agents.intake_batch.IntakeBatch`). In order, for ever:

1. ``poll`` blocks until a request arrives (at most a second, to see a stop), then
   ``consume(n, 0)`` takes what has already been fetched: a batch ends as soon as nothing more
   waits (no window: an idle intake answers at once and does not spin);
2. the messages are sorted (:mod:`agents.intake_messages`): readable requests, and markers for
   what librdkafka could not read (each becomes a dead letter by position);
3. the batch is handled to the end: completed against the intake's progress (records handled
   before are dropped, skipped offsets read directly, :mod:`agents.intake_gaps`), checked,
   forwarded to the shard inbox and dead-lettered, **every record confirmed by the broker**
   (:mod:`agents.batch_sender`), and only then the progress committed
   (:mod:`agents.intake_progress`). The batch's coroutines run on an event loop private to
   this thread (schema-registry lookups and the producer's wait go to threads of it);
4. the loop seeks past unreadable offsets and stores each partition's next offset as a hint.

**What says where a partition resumes.** The intake's own progress group
(``<prefix>-intake-progress``): the offset after the last request forwarded or dead-lettered
**and** confirmed. The consumer is in a group of its own (``<prefix>-worker-intake``,
cooperative sticky assignment: one owner a partition); its committed offsets are only a hint.
Its rebalance callbacks run inside ``poll``, on this thread, so a revocation never races a
batch in flight: on assignment each partition's progress is read again (another owner may
have moved it on) and the partition is read from there; when the progress cannot be read
(the broker is away) it starts at the hint, and the first batch, completed against the
progress, drops what was handled and reads what was skipped. On revocation, or a lost
assignment, the cached progress is forgotten.

So a request is forwarded before its progress is committed, and read again only by an owner
that started before that commit: a crash between the two forwards the batch again (the shard
drops a submission it knows, ``DuplicateSubmission``, and a replayed request id), never loses
it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from agents.batch_sender import BatchedSender, intake_producer
from agents.gap_reader import GapRecord, read_range
from agents.intake_batch import IntakeBatch
from agents.intake_gaps import IntakeGaps
from agents.intake_messages import IntakeMessages, sort_requests
from agents.intake_progress import IntakeProgress, progress_group
from agents.loop_thread import OFFSET_STORED, hinted_consumer
from agents.offset_hints import seek_past, store_hints
from streams.clients import ready_messages
from streams.kafka_native import Consumer, KafkaException, TopicPartition
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["IntakeLoop", "intake_consumer", "intake_loop"]

log = logging.getLogger(__name__)


def intake_consumer(settings: Settings, session_timeout_s: float) -> Consumer:
    """The requests' consumer: a group of its own (``agents.loop_thread``)."""
    return hinted_consumer(settings.bootstrap, f"{settings.prefix}-worker-intake",
                           session_timeout_s)


def intake_loop(settings: Settings, worker_group: str, *, batch_max: int,
                session_timeout_s: float) -> IntakeLoop:
    """The worker's intake loop, wired: its progress, gap reader, producer and batch handler."""
    topics = Topics(settings)
    bootstrap, topic = settings.bootstrap, topics.requests
    progress = IntakeProgress(bootstrap, topic, progress_group(settings.prefix), worker_group)

    def read(partition: int, first: int, end: int) -> Iterator[GapRecord]:
        return read_range(bootstrap, topic, partition, first, end)

    gaps = IntakeGaps(progress, read, topic, topics.dead_letters)
    batch = IntakeBatch(settings, BatchedSender(lambda: intake_producer(bootstrap)), gaps)
    return IntakeLoop(settings, progress, batch, batch_max=batch_max,
                      make_consumer=lambda: intake_consumer(settings, session_timeout_s))


class IntakeLoop:
    """The intake thread's state and loop (module docstring)."""

    def __init__(self, settings: Settings, progress: IntakeProgress, batch: IntakeBatch, *,
                 batch_max: int, make_consumer: Callable[[], Consumer]) -> None:
        self.topics = Topics(settings)
        self.progress = progress
        self.batch = batch
        self.batch_max = batch_max
        self.assigned: set[int] = set()
        self.stopping = threading.Event()
        self._make_consumer = make_consumer
        self._skipped: dict[int, int] = {}

    def run(self) -> None:
        """Poll and handle batches until :attr:`stopping` is set; then leave the group."""
        loop = asyncio.new_event_loop()
        reader = self._make_consumer()
        reader.subscribe([self.topics.requests], on_assign=self._on_assign,
                         on_revoke=self._on_revoke, on_lost=self._on_revoke)
        try:
            while not self.stopping.is_set():
                # no name holds a batch while the next one is waited for: a batch can be
                # gigabytes (a gzip bomb's records, ``streams.clients._BOUNDED_PREFETCH``)
                self._handle(loop, reader, ready_messages(reader, self.batch_max, 1.0))
        finally:
            try:
                reader.close()
            except Exception:
                log.exception("closing the requests consumer failed")
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()
            self.progress.close()

    def _handle(self, loop: asyncio.AbstractEventLoop, reader: Consumer,
                messages: list[Any]) -> None:
        if not messages:
            return
        batch = sort_requests(messages, self.topics.requests, self.assigned)
        for error in batch.errors:
            log.warning("intake: %s", error)
        if batch.records:
            loop.run_until_complete(self.batch.handle(batch.records))
        self._store_hints(reader, batch)
        self._seek_past(reader, batch)

    # -- ownership --------------------------------------------------------------------------

    def _on_assign(self, reader: Consumer, partitions: list[TopicPartition]) -> None:
        """The group gave this worker ``partitions``: read each from the intake's progress."""
        mine = {tp.partition for tp in partitions if tp.topic == self.topics.requests}
        self.assigned |= mine
        self.progress.forget(mine)  # another owner may have moved them on
        try:
            self.progress.load(mine)
        except Exception:  # the broker is away: start at the hint, the batch puts it right
            log.exception("intake: could not load the progress of %s", sorted(mine))
        starts = []
        for tp in partitions:
            offset = OFFSET_STORED
            if tp.topic == self.topics.requests:
                self._skipped.pop(tp.partition, None)
                known = self.progress.cached(tp.partition)
                if known is not None:
                    offset = known
            starts.append(TopicPartition(tp.topic, tp.partition, offset))
        log.info("requests partitions assigned: %s", sorted(mine))
        reader.incremental_assign(starts)

    def _on_revoke(self, reader: Consumer, partitions: list[TopicPartition]) -> None:
        """``partitions`` are no longer this worker's (revoked, or the session was lost)."""
        mine = {tp.partition for tp in partitions if tp.topic == self.topics.requests}
        log.info("requests partitions revoked: %s", sorted(mine))
        self.assigned -= mine
        self.progress.forget(mine)
        try:
            reader.incremental_unassign(partitions)
        except KafkaException as exc:  # the consumer is closing, or the assignment is gone
            log.info("intake: unassigning %s: %s", sorted(mine), exc)

    # -- effects ----------------------------------------------------------------------------

    def _store_hints(self, reader: Consumer, batch: IntakeMessages) -> None:
        store_hints(reader, self.topics.requests, batch.next_offsets, self.assigned, "intake")

    def _seek_past(self, reader: Consumer, batch: IntakeMessages) -> None:
        seek_past(reader, self.topics.requests, batch.skip, self.assigned, self._skipped, "intake")
