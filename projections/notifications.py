"""Job-start notifications, published exactly once per run, and Slurm jobcomp/kafka JSON.

For every ``JobStarted`` fact the projection publishes a ``JobStartNotification`` (Avro,
single-object encoding) on ``sluice.job-starts``, keyed by the job SLUID. With
``SLUICE_JOBCOMP=1`` it also publishes Slurm jobcomp/kafka JSON: a start record on
``<cluster>-job-start`` in the same transaction, and a finish record on ``<cluster>`` for every
``JobEnded`` (``projections.jobcomp``).

**The guarantee: each run's notification is committed exactly once.** Every outgoing message
carries the header ``sluice-notification`` with its id (``start:<run SLUID>``,
``end:<run or job SLUID>``). The steps, and why nothing is lost or doubled:

1. *Listener* (the projection thread, before the views persist the batch that holds the fact):
   an id already published or pending is skipped; otherwise the messages are written to the
   projection's RocksDB as ``notify:pending:<id>``. The views' positions are written after
   this, to the same database, so a pending record survives any crash that could lose its fact.
2. *Publisher* (a thread): pending messages are produced in one Kafka transaction with a
   transactional id of this system's projections; after the commit the ids go back to the
   listener thread, which marks them ``notify:done:<id>``, deletes the pending record and
   records how far the output topics were written (``notify:scan``), in one RocksDB batch.
3. *Recovery* (start-up): ``init_transactions`` fences any previous instance and aborts its open
   transaction; then the output topics are read (read-committed) from ``notify:scan`` to their
   end, and every id found is marked done. Pending records not found are published again.

A committed message is therefore either found by step 3 or already marked done, and a pending
one that was not committed is published again. The done marks live in the store; memory holds
only the last :data:`DONE_KEPT` of them (``done``), and an id not there is looked up in the
store, so memory does not grow with the runs ever started. Replayed facts (the views resume
from their stored positions) find their id done. A ``--rebuild`` starts with an empty
database: the whole output topics are read, and facts older than the topics' retention (7 days)
are not announced again. Consumers must read with ``isolation.level=read_committed``: an
aborted transaction's records are visible to read-uncommitted readers (Slurm's own
jobcomp/kafka is at-least-once).
One projections process per system is assumed; a second one is fenced by the transactional id.

**A producer cut off for good is replaced.** After a broker stall librdkafka 2.16 can forget
every broker and never look again (confluentinc/librdkafka#5301, ``agents.group_watch``): the
publisher then retried its commit for ever and no notification was published again until the
views restarted. When its commits have not been confirmed for ``SLUICE_WORKER_REJOIN_TIMEOUT``
(60 s) while the broker answers a new client, a new producer with the same transactional id is
made; its ``init_transactions`` fences the old one and completes or aborts the transaction it
left, and, as in step 3, the output topics are read from ``notify:scan``: the batch's ids found
are marked done, the others published again.
"""

from __future__ import annotations

import base64
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from agents.group_watch import GroupWatch, rejoin_limit_s
from agents.node.link_watch import let_go
from projections.jobcomp import finish_record, start_record
from projections.otel import traceparent
from schemas import encode
from streams.clients import consumer, transactional_producer
from streams.rocks import RocksStore
from streams.settings import Settings
from streams.topics import DAY_MS, Topics

__all__ = ["HEADER", "Notifier", "notification_of"]

log = logging.getLogger(__name__)

HEADER = "sluice-notification"
RETENTION_MS = 7 * DAY_MS
DONE_KEPT = 10_000
"""How many done ids the notifier keeps in memory (the others are in the store)."""
_PENDING, _DONE, _SCAN = b"notify:pending:", b"notify:done:", b"notify:scan"
Ends = dict[str, dict[int, int]]
"""Topic → partition → the next offset after what was written or read."""
_RELINK_PAUSE_S = 5.0
"""The pause between two tries to replace a producer cut off."""


class ProducerCutOffError(Exception):
    """The publisher's commits have not been confirmed while the broker answers others."""


@dataclass
class Outgoing:
    """The messages of one notification id, produced in one transaction."""

    id: str
    messages: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> bytes:
        return json.dumps({"id": self.id, "messages": self.messages}).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Outgoing:
        value = json.loads(data)
        return cls(value["id"], value["messages"])


def _message(topic: str, key: str | None, value: bytes, headers: dict[str, str]) -> dict[str, Any]:
    return {"topic": topic, "key": key, "value": base64.b64encode(value).decode(),
            "headers": headers}


def _eligible_ms(job: Mapping[str, Any], run_sluid: str, fallback: int) -> int:
    runs = list(job.get("runs", []))
    index = next((i for i, r in enumerate(runs) if r["run_sluid"] == run_sluid), len(runs))
    previous = runs[index - 1] if index > 0 else None
    if previous is not None and previous.get("end_ms"):
        return int(previous["end_ms"])
    return int(job.get("submit_ms") or fallback)


def notification_of(record: Mapping[str, Any], job: Mapping[str, Any],
                    cluster: str) -> dict[str, Any]:
    """The ``JobStartNotification`` of a ``JobStarted`` fact and the job's view row."""
    start = int(record["time_ms"])
    submit = int(record.get("submit_ms") or job.get("submit_ms") or start)
    eligible = _eligible_ms(job, str(record["run_sluid"]), submit)
    return {
        "event_sluid": str(record["event_sluid"]), "job_sluid": str(record["job_sluid"]),
        "job_id": int(record["job_id"]), "run_sluid": str(record["run_sluid"]),
        "restart_count": int(record.get("restart_count", 0)), "cluster": cluster,
        "user": str(record.get("user") or job.get("user", "")),
        "account": str(job.get("account", "")),
        "partition": str(record.get("partition") or job.get("partition", "")),
        "name": str(job.get("name", "")), "nodes": list(record["nodes"]),
        "segments": list(record.get("segments", [])), "start_ms": start, "submit_ms": submit,
        "eligible_ms": eligible, "queue_wait_s": max(start - eligible, 0) // 1000,
        "time_limit_s": int(record.get("time_limit_s", 0)), "shard": str(record["shard"]),
        "shard_seq": int(record["shard_seq"]),
    }


class Notifier:
    """Publishes notifications for one projection service (see the module docstring)."""

    def __init__(self, settings: Settings, store: RocksStore, views: Any, jobcomp: bool = False,
                 clock: Callable[[], float] = time.time, retention_ms: int = RETENTION_MS,
                 producer_factory: Callable[[str, str], Any] = transactional_producer,
                 watch: GroupWatch | None = None) -> None:
        self.settings, self.store, self.views, self.jobcomp = settings, store, views, jobcomp
        self.topics = Topics(settings)
        self.clock, self.retention_ms = clock, retention_ms
        self._producer_factory = producer_factory
        self._producer: Any = None
        self._watch = watch or GroupWatch("notifications producer", settings.bootstrap,
                                          rejoin_limit_s(), symptom="no commit confirmed")
        self.done: dict[str, None] = {}
        """The last :data:`DONE_KEPT` ids marked done, oldest first (all are in the store)."""
        self.pending: dict[str, Outgoing] = {}
        self.scan: dict[str, dict[int, int]] = {}
        self._work: queue.Queue[Outgoing | None] = queue.Queue()
        self._committed: queue.Queue[tuple[list[str], dict[str, dict[int, int]]]] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._publish_loop, name="notifier", daemon=True)
        self.published = 0

    # -- recovery ---------------------------------------------------------------------------

    def output_topics(self) -> list[str]:
        """Every topic this notifier writes to."""
        topics = [self.topics.job_starts]
        if self.jobcomp:
            topics += [self.topics.jobcomp_start, self.topics.jobcomp_finish]
        return topics

    def _new_producer(self) -> Any:
        """A producer of this system's transactional id, initialised: older ones fenced."""
        producer = self._producer_factory(
            self.settings.bootstrap, f"{self.settings.prefix}.projections.notifications")
        producer.init_transactions(60)
        return producer

    def recover(self) -> None:
        """Fence older instances, load the state, and mark done what the topics already hold."""
        self._producer = self._new_producer()
        now_ms = int(self.clock() * 1000)
        stale = []
        kept = 0
        for key, value in self.store.items(_DONE):
            if int(value or b"0") < now_ms - 2 * self.retention_ms:
                stale.append(key)
            else:
                kept += 1
        for _key, value in self.store.items(_PENDING):
            outgoing = Outgoing.from_json(value)
            self.pending[outgoing.id] = outgoing
        raw = self.store.get(_SCAN)
        if raw is not None:
            self.scan = {t: {int(p): o for p, o in parts.items()}
                         for t, parts in json.loads(raw).items()}
        topics = sorted({*self.output_topics(),
                         *(m["topic"] for o in self.pending.values() for m in o.messages)})
        found, ends = _published_ids(self.settings.bootstrap, topics, self.scan)
        self._mark_done(sorted(found), ends, stale)
        log.info("notifications: %d done, %d pending after recovery (%d found in the topics)",
                 kept + len(found), len(self.pending), len(found))

    def _mark_done(self, ids: Iterable[str], ends: Mapping[str, Mapping[int, int]],
                   deletes: list[bytes] | None = None) -> None:
        now = str(int(self.clock() * 1000)).encode()
        puts, removed = {}, list(deletes or [])
        for ident in ids:
            self._remember(ident)
            puts[_DONE + ident.encode()] = now
            if self.pending.pop(ident, None) is not None:
                removed.append(_PENDING + ident.encode())
        for topic, parts in ends.items():
            current = self.scan.setdefault(topic, {})
            for partition, offset in parts.items():
                current[partition] = max(current.get(partition, 0), offset)
        puts[_SCAN] = json.dumps(self.scan).encode()
        self.store.write(puts, removed)

    # -- the listener (projection thread) -----------------------------------------------------

    def on_fact(self, name: str, record: dict[str, Any], _timestamp_ms: int) -> None:
        """Queue the notifications of one newly applied fact (under the service lock)."""
        self._drain()
        if name == "JobStarted":
            outgoing = self._start(record)
        elif name == "JobEnded" and self.jobcomp:
            outgoing = self._finish(record)
        else:
            return
        if outgoing is None:
            return
        self.store.write({_PENDING + outgoing.id.encode(): outgoing.to_json()})
        self.pending[outgoing.id] = outgoing
        self._work.put(outgoing)

    def _remember(self, ident: str) -> None:
        self.done.pop(ident, None)
        self.done[ident] = None
        while len(self.done) > DONE_KEPT:
            del self.done[next(iter(self.done))]

    def is_done(self, ident: str) -> bool:
        """Whether notification ``ident`` was published (in memory, else in the store)."""
        return ident in self.done or self.store.get(_DONE + ident.encode()) is not None

    def _fresh(self, ident: str, time_ms: int) -> bool:
        if time_ms < self.clock() * 1000 - self.retention_ms:
            return False
        return ident not in self.pending and not self.is_done(ident)

    def _start(self, record: Mapping[str, Any]) -> Outgoing | None:
        run, job_sluid = str(record["run_sluid"]), str(record["job_sluid"])
        ident = f"start:{run}"
        if not self._fresh(ident, int(record["time_ms"])):
            return None
        job = self.views.jobs.get(job_sluid) or {}
        headers = {HEADER: ident, "traceparent": traceparent(job_sluid, run)}
        body = notification_of(record, job, self.settings.cluster)
        outgoing = Outgoing(ident, [_message(self.topics.job_starts, job_sluid,
                                             encode("JobStartNotification", body), headers)])
        if self.jobcomp:
            value = start_record(job, record, self.settings.cluster, body["eligible_ms"])
            outgoing.messages.append(_message(self.topics.jobcomp_start, None,
                                              json.dumps(value).encode(), headers))
        return outgoing

    def _finish(self, record: Mapping[str, Any]) -> Outgoing | None:
        job_sluid = str(record["job_sluid"])
        ident = f"end:{record.get('run_sluid') or job_sluid}"
        if not self._fresh(ident, int(record["time_ms"])):
            return None
        job = self.views.jobs.get(job_sluid)
        if job is None:
            return None
        eligible = _eligible_ms(job, str(record.get("run_sluid", "")),
                                int(job.get("submit_ms", 0)))
        value = finish_record(job, record, self.settings.cluster, eligible)
        headers = {HEADER: ident, "traceparent": traceparent(job_sluid,
                                                             str(record.get("run_sluid", "")))}
        return Outgoing(ident, [_message(self.topics.jobcomp_finish, None,
                                         json.dumps(value).encode(), headers)])

    def _drain(self) -> None:
        ids: list[str] = []
        ends: dict[str, dict[int, int]] = {}
        while True:
            try:
                done, written = self._committed.get_nowait()
            except queue.Empty:
                break
            ids += done
            for topic, parts in written.items():
                for partition, offset in parts.items():
                    current = ends.setdefault(topic, {})
                    current[partition] = max(current.get(partition, 0), offset)
        if ids:
            self._mark_done(ids, ends)

    # -- the publisher thread -----------------------------------------------------------------

    def start(self) -> None:
        """Publish what recovery left pending, then whatever the listener queues."""
        for outgoing in list(self.pending.values()):
            self._work.put(outgoing)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop after the current transaction."""
        self._stop.set()
        self._work.put(None)
        self._thread.join(timeout_s)

    def _publish_loop(self) -> None:
        while not self._stop.is_set():
            batch = self._take()
            if not batch:
                continue
            try:
                written = self._publish(batch)
            except ProducerCutOffError:
                self._relink(batch)
                continue
            except KafkaException as exc:
                error = exc.args[0]
                if error.fatal() or error.code() in (KafkaError._FENCED,
                                                     KafkaError.PRODUCER_FENCED):
                    log.error("notifications: producer fenced or failed for good: %s", error)
                    return
                log.warning("notifications: transaction failed (%s); retrying", error)
                if error.txn_requires_abort():
                    self._producer.abort_transaction(30)
                for outgoing in batch:
                    self._work.put(outgoing)
                time.sleep(0.5)
                continue
            self.published += len(batch)
            self._committed.put(([o.id for o in batch], written))

    def _relink(self, batch: list[Outgoing]) -> None:
        """Replace the producer cut off (module docstring); what of ``batch`` its last
        transaction committed is marked done, the rest published again."""
        while not self._stop.is_set():
            fresh = None
            try:
                fresh = self._new_producer()  # fences the old one: its transaction ends
                raw = self.store.get(_SCAN)  # the listener's own dict may change meanwhile
                scan = ({t: {int(p): o for p, o in parts.items()}
                         for t, parts in json.loads(raw).items()} if raw is not None else {})
                topics = sorted({*self.output_topics(),
                                 *(m["topic"] for o in batch for m in o.messages)})
                found, ends = _published_ids(self.settings.bootstrap, topics, scan)
            except (KafkaException, TimeoutError) as exc:
                log.warning("notifications: replacing the producer failed (%s); again in "
                            "%.0f s", exc, _RELINK_PAUSE_S)
                if fresh is not None:
                    let_go(fresh)
                self._stop.wait(_RELINK_PAUSE_S)
                continue
            let_go(self._producer)
            self._producer = fresh
            done = [o.id for o in batch if o.id in found]
            self._committed.put((done, ends))
            for outgoing in batch:
                if outgoing.id not in found:
                    self._work.put(outgoing)
            log.warning("notifications: producer replaced; %d of the batch's %d were "
                        "committed, the others are published again", len(done), len(batch))
            return

    def _take(self, limit: int = 1000) -> list[Outgoing]:
        first = self._work.get()
        if first is None:
            return []
        batch, seen = [first], {first.id}
        while len(batch) < limit:
            try:
                item = self._work.get(timeout=0.005)
            except queue.Empty:
                break
            if item is None:
                self._stop.set()
                break
            if item.id not in seen:
                batch.append(item)
                seen.add(item.id)
        return batch

    def _publish(self, batch: list[Outgoing]) -> dict[str, dict[int, int]]:
        producer = self._producer
        written: Ends = {}

        def delivered(error: Any, message: Any) -> None:
            if error is None:
                parts = written.setdefault(message.topic(), {})
                parts[message.partition()] = max(parts.get(message.partition(), 0),
                                                 message.offset() + 1)

        producer.begin_transaction()
        for outgoing in batch:
            for m in outgoing.messages:
                producer.produce(m["topic"], base64.b64decode(m["value"]),
                                 m["key"].encode() if m["key"] else None,
                                 headers=list(m["headers"].items()), on_delivery=delivered)
        while True:
            try:
                producer.commit_transaction(60)
                self._watch.lasting(False)
                return written
            except KafkaException as exc:
                # A retriable commit error (a timeout) may have committed: retry the commit,
                # never abort it, or the batch could be published twice.
                if not exc.args[0].retriable():
                    raise
                if self._watch.lasting(True):
                    raise ProducerCutOffError from exc
                log.warning("notifications: commit not confirmed (%s); retrying", exc.args[0])


def _published_ids(bootstrap: str, topics: list[str],
                   start: Mapping[str, Mapping[int, int]]) -> tuple[set[str], Ends]:
    """Every notification id committed to ``topics`` from ``start`` on, and where they end."""
    reader = consumer(bootstrap)
    found: set[str] = set()
    ends: dict[str, dict[int, int]] = {}
    try:
        assignment = []
        for topic in topics:
            meta = reader.list_topics(topic, timeout=10).topics.get(topic)
            if meta is None or meta.error is not None:
                continue
            for p in sorted(meta.partitions):
                first = start.get(topic, {}).get(p, 0)
                assignment.append(TopicPartition(topic, p, first))
        reader.assign(assignment)
        open_parts = {(tp.topic, tp.partition) for tp in assignment}
        deadline = time.monotonic() + 120
        while open_parts and time.monotonic() < deadline:
            messages: list[Any] = reader.consume(num_messages=5000, timeout=0.1)
            for message in messages:
                key = (str(message.topic()), int(message.partition()))
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        open_parts.discard(key)
                        ends.setdefault(key[0], {})[key[1]] = message.offset()
                    continue
                for name, value in message.headers() or []:
                    if name == HEADER and value is not None:
                        found.add(value.decode())
        if open_parts:
            raise TimeoutError(f"notification topics not read to their end: {open_parts}")
    finally:
        reader.close()
    return found, ends
