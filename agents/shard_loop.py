"""The shard scheduler's loop: the shard inbox read in batches by confluent-kafka, on one thread.

One thread (started and stopped with the worker's faust app, ``agents.shard_agent``) owns
everything a shard's decisions touch: a confluent-kafka consumer of the inbox, one
:class:`~agents.shard_runner.ShardRunner` per partition it owns, and the warm standbys of the
others (``agents.shard_standby``). In order, for ever:

1. ``poll`` blocks until a record arrives (or the next standby catch-up is due, at most a
   second), then ``consume(n, 0)`` takes what has already been fetched: a batch ends as soon
   as nothing more waits (no window: an idle shard answers at once and does not spin);
2. the messages are sorted (``agents.inbox_messages``): unreadable ones become dead letters,
   delivered before anything is decided, and markers that stand for their offsets;
3. each partition's records go to its runner when :class:`~agents.shard_ownership.Ownership`
   allows it (the partition is assigned here and its runner was not fenced less than a
   session ago); a runner that is fenced or raises is dropped (its store closed) and recovers
   on the next batch;
4. the standbys catch up once a second (``SLUICE_STANDBY_INTERVAL``).

**A full or read-only state directory** (``streams.state_dir``): a batch whose store write
fails for it drops its runner as any failed batch does (the facts it published are folded back
from the ledger when the runner opens again), but is not logged with a traceback: the process's
alarm logs one line naming the directory and the reason (again at most once a minute) and sets
``sluice_state_dir_full``/``_read_only``. The loop then pauses its partitions, so nothing more
is decided or hinted, and keeps polling (the group keeps its members) while it backs off (1 s
doubling to 10 s); when a probe file can be written again it resumes them, and each shard's
runner opens and reads the records it missed from its own inbox offset (its gap reader).

**Ownership.** The consumer is in a group of its own (``<worker group>-shards``, cooperative
sticky assignment: each partition has one owner). Its rebalance callbacks run inside ``poll``,
on this same thread, so a revocation can never race a batch in flight. On assignment each
partition's runner is opened at once (its transactional id fences the previous owner before it
reads anything) and the partition is read from the runner's own applied inbox offset + 1: the
shard's state says where it stands, committed offsets are only a hint (stored after each batch,
used only when a runner could not open). On revocation, or when the assignment is lost (a
session that expired), the runners are closed before the callback returns.

A worker that stalled past its session resumes with records already fetched for partitions
that may be another worker's now; its runner's transaction is fenced by the new owner's, and
it waits a session before opening that shard again (``agents.shard_ownership``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agents.batch_sender import produce_and_confirm
from agents.forwarding import Outgoing, PermanentSendError
from agents.gap_reader import read_range
from agents.inbox_messages import InboxBatch, sort_messages
from agents.loop_thread import OFFSET_STORED, hinted_consumer
from agents.metrics import observe_batch
from agents.offset_hints import seek_past
from agents.shard_ownership import Ownership
from agents.shard_runner import InboxRecord, ShardFencedError, ShardRunner
from agents.shard_standby import Standbys
from streams.clients import producer, ready_messages
from streams.kafka_native import Consumer, KafkaException, TopicPartition
from streams.settings import Settings
from streams.state_dir import BackOff, alarm, probe, problem_of
from streams.topics import Topics

__all__ = ["ShardLoop", "inbox_consumer"]

log = logging.getLogger(__name__)


def inbox_consumer(settings: Settings, session_timeout_s: float) -> Consumer:
    """The shard inbox' consumer: a group of its own (``agents.loop_thread``)."""
    return hinted_consumer(settings.bootstrap, f"{settings.prefix}-worker-shards",
                           session_timeout_s)


class ShardLoop:
    """The shard thread's state and loop (module docstring)."""

    def __init__(self, settings: Settings, *, batch_max: int, session_timeout_s: float,
                 standby_interval_s: float,
                 make_consumer: Callable[[], Consumer] | None = None) -> None:
        self.settings = settings
        self.topics = Topics(settings)
        self.batch_max = batch_max
        self.runners: dict[int, ShardRunner] = {}
        self.ownership = Ownership(session_timeout_s)
        self.standbys = Standbys(settings) if standby_interval_s > 0 else None
        self.standby_interval_s = standby_interval_s
        self.assigned: set[int] = set()
        self.stopping = threading.Event()
        self._make_consumer = make_consumer or (
            lambda: inbox_consumer(settings, session_timeout_s))
        self._letters: Any = None
        self._skipped: dict[int, int] = {}
        self.state_dir = Path(settings.home) / "worker"
        self._back_off = BackOff()
        self._trouble_until: float | None = None  # paused: the state directory refused a write

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        """Poll, decide, catch the standbys up; until :attr:`stopping` is set. Closes every
        runner, standby and the consumer on the way out."""
        reader = self._make_consumer()
        reader.subscribe([self.topics.shard_inbox], on_assign=self._on_assign,
                         on_revoke=self._on_revoke, on_lost=self._on_revoke)
        next_standby = time.monotonic()
        try:
            while not self.stopping.is_set():
                if self._trouble_until is not None:
                    self._wait_out_trouble(reader)
                    continue
                wait = 1.0 if self.standbys is None else min(
                    1.0, max(0.0, next_standby - time.monotonic()))
                messages = ready_messages(reader, self.batch_max, wait)
                if messages:
                    self._handle(reader, messages)
                if (self.standbys is not None and time.monotonic() >= next_standby
                        and self._trouble_until is None):
                    self.standbys.catch_up(set(self.runners) | self.assigned)
                    next_standby = time.monotonic() + self.standby_interval_s
        finally:
            self._close(reader)

    def _handle(self, reader: Consumer, messages: list[Any]) -> None:
        batch = sort_messages(messages, self.topics.shard_inbox, self.topics.dead_letters)
        for error in batch.errors:
            log.warning("shard inbox: %s", error)
        if batch.letters:
            self._deliver(batch.letters)
        for index in sorted(batch.records):
            if self._trouble_until is not None:  # the runners read what they missed later
                break
            records = batch.records[index]
            if not self.ownership.may_run(index, self.assigned, running=index in self.runners):
                if index in self.runners:
                    self._drop(index)
                continue
            if self._process(index, records):
                self._store_hint(reader, index, records[-1].last_offset + 1)
        self._seek_past(reader, batch)

    def _process(self, index: int, records: list[InboxRecord]) -> bool:
        """Hand ``records`` to the shard's runner; whether they were applied."""
        try:
            runner = self._runner_for(index)
            runner.process(records)
        except ShardFencedError:
            log.warning("shard %d is owned by another worker now; dropping it", index)
            self.ownership.fenced(index)
            self._drop(index)
            return False
        except Exception as exc:
            # State may be half-applied in memory: rebuild it from the store and the ledger on
            # the next batch. This batch's records are re-read through the gap reader.
            if not self._in_trouble(exc, f"shard {index}'s store writes"):
                log.exception("shard %d: batch failed; the shard will recover and retry", index)
            self._drop(index)
            return False
        alarm.cleared(self.state_dir)
        self._back_off.reset()
        return True

    # -- a full or read-only state directory ------------------------------------------------

    def _in_trouble(self, exc: BaseException, what: str) -> bool:
        """Whether ``exc`` is a write the state directory refused (full, read-only): then it
        is said (rate-limited) and the loop pauses for the next back-off."""
        problem = problem_of(exc)
        if problem is None:
            return False
        alarm.failed(self.state_dir, problem, what)
        self._trouble_until = time.monotonic() + self._back_off.next()
        return True

    def _wait_out_trouble(self, reader: Consumer) -> None:
        """While paused: poll (rebalances, no records: the partitions are paused; a record
        that still comes is left to its runner's gap reader) until the back-off is over,
        then probe the directory and resume, or pause for the next back-off."""
        assert self._trouble_until is not None
        self._pause(reader, pause=True)
        left = self._trouble_until - time.monotonic()
        if left > 0:
            dropped = ready_messages(reader, self.batch_max, min(left, 1.0))
            if dropped:
                log.debug("shard loop paused: %d records left to the gap readers", len(dropped))
            return
        problem = probe(self.state_dir)
        if problem is not None:
            alarm.failed(self.state_dir, problem, "the shards' store writes")
            self._trouble_until = time.monotonic() + self._back_off.next()
            return
        self._trouble_until = None
        self._pause(reader, pause=False)

    def _pause(self, reader: Consumer, *, pause: bool) -> None:
        try:
            partitions = [tp for tp in reader.assignment() if tp.topic == self.topics.shard_inbox]
            if partitions:
                (reader.pause if pause else reader.resume)(partitions)
        except KafkaException as exc:  # the consumer is closing, or the assignment is gone
            log.info("shard inbox: %s: %s", "pause" if pause else "resume", exc)

    # -- ownership --------------------------------------------------------------------------

    def _on_assign(self, reader: Consumer, partitions: list[TopicPartition]) -> None:
        """The group gave this worker ``partitions``: open their runners (fencing the previous
        owner) and read each from its runner's next inbox offset."""
        mine = [tp.partition for tp in partitions if tp.topic == self.topics.shard_inbox]
        self.assigned.update(mine)
        self.ownership.assigned(mine)
        starts = []
        for tp in partitions:
            offset = OFFSET_STORED
            if tp.topic == self.topics.shard_inbox:
                runner = self._open(tp.partition)
                if runner is not None:
                    offset = runner.next_offset
                    self._skipped.pop(tp.partition, None)
            starts.append(TopicPartition(tp.topic, tp.partition, offset))
        log.info("shard inbox partitions assigned: %s", sorted(mine))
        reader.incremental_assign(starts)

    def _on_revoke(self, reader: Consumer, partitions: list[TopicPartition]) -> None:
        """``partitions`` are no longer this worker's (revoked, or the session was lost):
        close their runners before the group hands them on."""
        mine = sorted(tp.partition for tp in partitions if tp.topic == self.topics.shard_inbox)
        log.info("shard inbox partitions revoked: %s", mine)
        for index in mine:
            self.assigned.discard(index)
            self._drop(index)
        try:
            reader.incremental_unassign(partitions)
        except KafkaException as exc:  # the consumer is closing, or the assignment is gone
            log.info("shard inbox: unassigning %s: %s", mine, exc)

    def _open(self, index: int) -> ShardRunner | None:
        try:
            return self._runner_for(index)
        except Exception as exc:
            if not self._in_trouble(exc, f"shard {index}'s store"):
                log.exception("shard %d: its runner did not open; it is tried again on its "
                              "next record", index)
            return None

    def _runner_for(self, index: int) -> ShardRunner:
        runner = self.runners.get(index)
        if runner is None:
            if self.standbys is not None:
                self.standbys.release(index)
            shard = self.settings.shard_name(index)
            runner = ShardRunner(self.settings, index, self._gap_reader(index),
                                 on_batch=lambda stats: observe_batch(shard, stats))
            self.runners[index] = runner
            record_owned(self.settings.home, self.runners)
        return runner

    def _drop(self, index: int) -> None:
        runner = self.runners.pop(index, None)
        if runner is not None:
            record_owned(self.settings.home, self.runners)
            try:
                runner.close()
            except Exception as exc:
                if problem_of(exc) is None:
                    log.exception("closing shard %d failed", index)

    # -- effects ----------------------------------------------------------------------------

    def _deliver(self, letters: list[Outgoing]) -> None:
        """Deliver the dead letters, retried until the broker confirms each (a smaller letter
        if it refuses one for good): the offsets they stand for are skipped after."""
        pending = list(letters)
        while pending and not self.stopping.is_set():
            if self._letters is None:
                self._letters = producer(self.settings.bootstrap)
            outcomes = produce_and_confirm(self._letters, pending)
            retry = []
            for item, outcome in zip(pending, outcomes, strict=True):
                if outcome is None:
                    continue
                if isinstance(outcome, PermanentSendError) and item.fallback is not None:
                    retry.append(item.fallback)
                    continue
                log.warning("a dead letter was not delivered (%s); retrying", outcome)
                retry.append(item)
            pending = retry
            if pending:
                time.sleep(0.5)

    def _store_hint(self, reader: Consumer, index: int, next_offset: int) -> None:
        try:
            reader.store_offsets(offsets=[
                TopicPartition(self.topics.shard_inbox, index, next_offset)])
        except KafkaException as exc:  # the partition was revoked meanwhile: nothing to say
            log.debug("shard %d: offset hint not stored: %s", index, exc)

    def _seek_past(self, reader: Consumer, batch: InboxBatch) -> None:
        seek_past(reader, self.topics.shard_inbox, batch.skip, self.assigned, self._skipped,
                  "shard loop")

    def _gap_reader(self, index: int) -> Callable[[int, int], Iterator[InboxRecord]]:
        """Reads inbox records [first, end) of one partition directly, for gaps."""
        bootstrap, topic = self.settings.bootstrap, self.topics.shard_inbox

        def read(first: int, end: int) -> Iterator[InboxRecord]:
            for record in read_range(bootstrap, topic, index, first, end, poll_s=5.0,
                                     max_failures=6):
                yield InboxRecord(record.offset, record.timestamp_ms, record.value or b"",
                                  record.headers)

        return read

    def _close(self, reader: Consumer) -> None:
        """Leave the group (its revocation closes the runners), then close what is left."""
        try:
            reader.close()
        except Exception:
            log.exception("closing the shard inbox consumer failed")
        for index in sorted(self.runners):
            self._drop(index)
        if self.standbys is not None:
            self.standbys.close_all()
        if self._letters is not None:
            self._letters.flush(5)


def record_owned(home: Path, runners: dict[int, ShardRunner]) -> None:
    """``worker/owned.json``: the shards this worker owns now (for operators and tests)."""
    path = Path(home) / "worker" / "owned.json"
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps({"pid": os.getpid(), "shards": sorted(runners)}))
        tmp.replace(path)
    except OSError as exc:  # a full or read-only state directory: said by the alarm
        problem = problem_of(exc)
        if problem is None:
            raise
        alarm.failed(path.parent, problem, "owned.json")
