"""The projections service: folds the ledger into views, keeps them in RocksDB, serves them.

One process reads every partition of the ledger (``read_committed``) from the positions stored
with its views, so a restart resumes where it stopped and ``--rebuild`` starts over from the
beginning of the ledger. After each batch, the changed rows and the new positions are written in
one atomic RocksDB batch. The HTTP JSON API (``projections.http``) reads the in-memory views,
and the store for the jobs they no longer hold.

A write the state directory refuses because it is full or read-only (``streams.state_dir``)
waits inside the store's ``write``: the process's alarm says it in one line (again at most
once a minute, and shows it in ``/v1/status`` and ``sluice_state_dir_full``), nothing more is
read from the ledger, the API keeps answering from memory (the wait releases the views' lock),
and the same batch is written once a probe file can be written again; nothing is lost or
folded twice.

Memory stays bounded by the active jobs and a recent window: after each persisted batch, the
ended jobs older than ``MinJobAge`` (``SLUICE_MIN_JOB_AGE``, 300 s by default; by the views'
clock) leave memory (``Views.evict``) but stay in the store, indexed by job id and array
(``projections.archive``), and are read back on demand. A restart loads only the rows marked
``live:`` (those held in memory when it stopped); a store written before that index existed is
indexed once, in one pass over its rows, at its first start.

A thread of its own reads ``<prefix>.dead-letters`` into
:attr:`ProjectionService.dead_letter_index`: the requests the intake could not read, found by
their SLUID (``projections.dead_letter_index``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from projections.archive import JOB, StoreArchive, live_key, row_puts
from projections.broker_watch import PROBE_S, BrokerWatch, probe_forever
from projections.dead_letter_index import DeadLetterIndex, DeadLetterReader
from projections.views import ACTIVE_STATES, CLOCK_AHEAD_MS, Touched, Views
from schemas import DecodeError, decode
from streams.admin import BrokerProbe
from streams.clients import consumer, ready_messages
from streams.dead_letters import DeadLetterWriter
from streams.rocks import RocksStore, is_corruption, open_store, set_aside
from streams.settings import Settings
from streams.stale_store import past_the_end
from streams.state_dir import WaitOut, alarm, problem_of
from streams.topics import Topics

__all__ = ["ProjectionService"]

log = logging.getLogger(__name__)

_UNREADABLE = frozenset({KafkaError._BAD_MSG, KafkaError._BAD_COMPRESSION})
"""librdkafka's errors for a record (batch) it fetched but cannot read."""

FactListener = Callable[[str, dict[str, Any], int], None]
Fact = tuple[str, dict[str, Any], int]
"""A decoded ledger record: fact name, record, the message's timestamp (ms)."""

_INDEXED = 1
"""``meta["archive"]``: the store has the ``jobid:``, ``array:`` and ``live:`` keys."""
_INDEX_BATCH = 2000


_IDLE_POLL_S = 0.5
"""How long the ledger reader waits for a fact before it looks at its lag and ``stop()``: a fact
is taken the moment it comes (``ready_messages``), so this only sets how often an idle reader
wakes (20 times a second at 50 ms, 0.25 % of a core: issue 17) and how soon it sees ``stop()``."""


PAUSE_S = 0.002
"""How long a reader walking the archive lets the lock go at each pause (a waiting thread takes
it meanwhile)."""

class ProjectionService:
    """Ledger → views; ``run()`` blocks until ``stop()``."""

    def __init__(self, settings: Settings, rebuild: bool = False) -> None:
        self.settings = settings
        self.topics = Topics(settings)
        path = settings.home / "projections" / "views.db"
        if rebuild and path.exists():
            RocksStore.destroy(path)
        self._stopping = threading.Event()
        self.lock = threading.RLock()
        self.folded = threading.Condition(self.lock)
        """Notified after each folded batch (``projections.decisions`` waits on it)."""
        self.listeners: list[FactListener] = []
        self.caught_up = threading.Event()
        self.lag = 0
        self.broker = BrokerWatch()
        """Whether the ledger reader reaches the broker (``freshness``, ``sluice status``)."""
        self._at_end: set[int] = set()
        self._partitions = 0
        self.pins: dict[int, int] = {}
        """Per partition, the earliest ledger offset the next start must read again: a record
        the views could not decode (a fact of a newer schema, when workers were upgraded
        before the views) or a fact held behind a gap. The positions stored stop there, so
        views upgraded and restarted read the missing fact and the held ones again (the
        facts already folded are skipped by their ``shard_seq``); before, the restart resumed
        past them and only ``--rebuild`` recovered. Released once nothing is held and every
        partition was read to its end (a record that was no needed fact: junk, a forgery)."""
        self._dead_letters = DeadLetterWriter(settings)
        self.dead_letter_index = DeadLetterIndex(self.topics.requests)
        """The newest dead letters of requests by SLUID (``projections.dead_letter_index``),
        read by a thread of ``run``; guarded by :attr:`lock`."""
        self._open(path)
        try:
            self._load()
        except Exception as exc:
            if not is_corruption(exc):
                raise
            self.store.close()  # found corrupt while read: a rebuild, as at --rebuild
            set_aside(path, exc)
            self._open(path)
            self._load()

    def _open(self, path: Path) -> None:
        """Open the store (set aside first if RocksDB finds it corrupt: ``streams.rocks``)
        and empty views over it."""
        self.store = open_store(path)
        # a full or read-only directory: the write waits (consuming stops), said once a minute
        self.store.wait_out = WaitOut(self._stopping, "the views' writes", self._wait)
        self.store.written = alarm.cleared
        self.archive = StoreArchive(self.store)
        self.views = Views(archive=self.archive, retention_ms=self.settings.min_job_age_s * 1000,
                           shard_names=tuple(self.settings.shard_names()), pause=self._let_in)
        self.positions: dict[int, int] = {}

    def _let_in(self) -> None:
        """A long read's pause (``Views.pause``), called holding :attr:`lock`: the lock is let
        go for a moment, whatever its depth (``Condition.wait``), so the ledger's folding and
        the other API readers go on while a reader walks every job ever folded."""
        self.folded.wait(PAUSE_S)

    def _load(self) -> None:
        meta = self.store.get(b"meta")
        data = json.loads(meta) if meta is not None else {}
        if meta is not None and data.get("archive") != _INDEXED:
            self._index(data)
        for row in sorted(self.archive.live(), key=lambda r: int(r.get("end_ms", 0))):
            self.views.hold(row)
        for key, value in self.store.items(b"node:"):
            self.views.nodes[key[5:].decode()] = json.loads(value)
        if meta is not None:
            ceiling = self._clock_ceiling()  # a clock a forged fact moved before the bound
            self.views.shard_seq = data["shard_seq"]
            self.views.last_fact_ms = min(int(data["last_fact_ms"]), ceiling)
            self.views.cycle_ms = {shard: min(int(ms), ceiling)
                                   for shard, ms in data.get("cycle_ms", {}).items()}
            self.views.configs = data.get("configs", {})
            self.views.reservations = data.get("reservations", {})
            self.positions = {int(p): o for p, o in data["positions"].items()}
        self._evict()

    def _index(self, meta: dict[str, Any]) -> None:
        """Index a store of an older release (every row was held in memory then): job ids,
        arrays, and ``live:`` for the active jobs and those in the retention window."""
        horizon = int(meta.get("last_fact_ms", 0)) - self.settings.min_job_age_s * 1000
        puts: dict[bytes, bytes] = {}
        for _key, value in self.store.items(JOB):
            row = json.loads(value)
            live = row.get("state") in ACTIVE_STATES or int(row.get("end_ms", 0)) >= horizon
            puts.update(row_puts(row, live=live))
            if len(puts) >= _INDEX_BATCH:
                self.store.write(puts)
                puts = {}
        puts[b"meta"] = json.dumps({**meta, "archive": _INDEXED}).encode()
        self.store.write(puts)

    def _wait(self, seconds: float) -> None:
        """Wait while a write is refused: on the views' condition when this thread holds
        their lock (released meanwhile, so the API answers from memory), else plainly."""
        try:
            self.folded.wait(seconds)
        except RuntimeError:  # the lock is not this thread's (a notifier's write)
            self._stopping.wait(seconds)

    def stop(self) -> None:
        """Ask ``run`` to return."""
        self._stopping.set()

    def run(self) -> None:
        """Consume the ledger until stopped."""
        reader = consumer(self.settings.bootstrap, overrides={"error_cb": self.broker.on_error})
        topic = self.topics.events
        partitions = sorted(reader.list_topics(topic, timeout=10).topics[topic].partitions)
        self._partitions = len(partitions)
        self._assign(reader, topic, partitions)
        bootstrap = self.settings.bootstrap
        probe = BrokerProbe(bootstrap)
        threading.Thread(target=probe_forever, name="broker-probe", daemon=True, args=(
            self.broker, lambda: probe(PROBE_S), self._stopping)).start()
        threading.Thread(target=DeadLetterReader(
            bootstrap, self.topics.dead_letters, self.dead_letter_index, self.folded,
            self._stopping).run, name="dead-letters", daemon=True).start()
        last_lag_check = 0.0
        try:
            while not self._stopping.is_set():
                if self.broker.reader_cut_off():
                    reader = self._replace_reader(reader, topic, partitions)
                messages = ready_messages(reader, 2000, _IDLE_POLL_S)  # no wait once one is there
                if messages:
                    self.broker.heard()
                self.broker.check(reader, topic)
                self._apply_batch(messages)
                if time.monotonic() - last_lag_check > 1.0 or not messages:
                    lag = self._lag(reader, topic, partitions)
                    if lag is not None:
                        self.lag = lag
                    if lag == 0:
                        self.caught_up.set()
                    last_lag_check = time.monotonic()
        except Exception as exc:
            if not (self._stopping.is_set() and problem_of(exc)):
                raise
            # stopped while a write waited out a full or read-only directory: the batch it
            # held is read again from the stored positions at the next start
            log.warning("stopped with a write refused (%s): it is folded again at the next "
                        "start", problem_of(exc))
        finally:
            reader.close()
            self.store.close()

    def forget_another_ledger(self) -> None:
        """Set the store aside and fold again from the start when its positions are past the
        end of the ledger: it was folded from another ledger (``streams.stale_store``). Called
        before anything else holds the store (the projections mounted beside the views)."""
        with self.lock:
            ahead = past_the_end(self.settings.bootstrap,
                                 {self.topics.events: dict(self.positions)})
            if not ahead:
                return
            path = self.store.path
            self.store.close()
            set_aside(path, f"past the end of the broker's ledger: {'; '.join(ahead)}: folded "
                      "from another ledger (a broker or its topics reset?)", kind="stale")
            self._open(path)
            self.pins.clear()

    def _assign(self, reader: Any, topic: str, partitions: list[int]) -> None:
        reader.assign([
            TopicPartition(topic, p, self.positions.get(p, OFFSET_BEGINNING)) for p in partitions
        ])

    def _replace_reader(self, reader: Any, topic: str, partitions: list[int]) -> Any:
        """A new ledger reader, from the folded positions, for one cut off on its own
        (``projections.broker_watch``); the old one is closed on a thread of its own."""
        threading.Thread(target=reader.close, name="close-reader", daemon=True).start()
        fresh = consumer(self.settings.bootstrap, overrides={"error_cb": self.broker.on_error})
        self._at_end.clear()
        self._assign(fresh, topic, partitions)
        return fresh

    def _clock_ceiling(self) -> int:
        """The latest time the next batch's facts may move the views' clock to
        (``Views.clock_ceiling_ms``): this host's clock plus ``CLOCK_AHEAD_MS``."""
        ceiling = int(time.time() * 1000) + CLOCK_AHEAD_MS
        self.views.clock_ceiling_ms = ceiling
        return ceiling

    def _apply_batch(self, messages: list[Any]) -> None:
        touched = Touched()
        with self.lock:
            self._clock_ceiling()
            for message in messages:
                if message.error() is not None:
                    code = message.error().code()
                    if code == KafkaError._PARTITION_EOF:
                        self._at_end.add(message.partition())
                    elif code in _UNREADABLE:  # a record it cannot read: dead letter, skip
                        self._dead_letters.write(message, f"UnreadableBatch: {message.error()}")
                    else:
                        log.warning("ledger read error: %s", message.error())
                    continue
                self._at_end.discard(message.partition())
                self.positions[message.partition()] = message.offset() + 1
                try:
                    name, record = decode(message.value())
                except DecodeError as exc:
                    self._dead_letters.write(message, f"Undecodable: {exc}")
                    self._pin(message.partition(), message.offset())
                    continue
                self._fold(name, record, message.timestamp()[1], touched)
                if self.views.held and record.get("shard_seq") in self.views.held.get(
                        str(record.get("shard")), ()):
                    self._pin(message.partition(), message.offset())
            if self.pins and not self.views.held and len(self._at_end) >= self._partitions:
                self.pins.clear()  # nothing missing: the next start resumes where it is
            if messages:
                self._commit(touched)

    def _pin(self, partition: int, offset: int) -> None:
        if offset < self.pins.get(partition, offset + 1):
            self.pins[partition] = offset

    def fold(self, facts: list[Fact]) -> None:
        """Fold decoded facts as one batch: views, listeners, store, eviction (what a batch
        of ledger messages does after decoding; positions are the caller's)."""
        touched = Touched()
        with self.lock:
            self._clock_ceiling()
            for name, record, timestamp_ms in facts:
                self._fold(name, record, timestamp_ms, touched)
            self._commit(touched)

    def _fold(self, name: str, record: dict[str, Any], timestamp_ms: int,
              touched: Touched) -> None:
        result = self.views.apply(name, record)
        if result is None:
            return
        touched.jobs |= result.jobs
        touched.nodes |= result.nodes
        for listener in self.listeners:
            listener(name, record, timestamp_ms)

    def _commit(self, touched: Touched) -> None:
        self._persist(touched)
        self._evict()
        self.folded.notify_all()

    def _evict(self) -> None:
        """Drop the expired ended rows from memory (they are in the store) and their marks."""
        dropped = self.views.evict()
        if dropped:
            self.store.write({}, [live_key(sluid) for sluid in dropped])

    def _persist(self, touched: Touched) -> None:
        puts: dict[bytes, bytes] = {}
        for sluid in sorted(touched.jobs):
            if sluid in self.views.jobs:
                puts.update(row_puts(self.views.jobs[sluid]))
        puts.update({f"node:{k}".encode(): json.dumps(self.views.nodes[k]).encode()
                     for k in sorted(touched.nodes) if k in self.views.nodes})
        puts[b"meta"] = json.dumps({
            "shard_seq": self.views.shard_seq, "last_fact_ms": self.views.last_fact_ms,
            "cycle_ms": self.views.cycle_ms,
            "positions": {p: min(o, self.pins.get(p, o)) for p, o in self.positions.items()},
            "configs": self.views.configs,
            "reservations": self.views.reservations,
            "archive": _INDEXED,
        }).encode()
        self.store.write(puts)

    def _lag(self, reader: Any, topic: str, partitions: list[int]) -> int | None:
        """Records of the ledger the views have not folded yet; None while it cannot say.

        From the watermarks the reader's last fetch responses carried (librdkafka's cache):
        no request to the broker. A live query (``cached=False``) is a ListOffsets on the
        connection the reader's long-poll Fetch holds, and a broker answers one request of
        a connection at a time, so it waited for that fetch (up to ``fetch.wait.max.ms``)
        and every fold with it: run on each idle poll, it added 18 ms (median) between a
        shard's commit and the fold of its decision (docs/benchmarks.md). A fetch response
        comes at least every ``fetch.wait.max.ms`` (500 ms), so the cache is that fresh.
        """
        # A partition that reported its end since its last record is caught up: the offsets
        # past its last record are transaction markers, which a reader never receives.
        lag = 0
        behind = [p for p in partitions if p not in self._at_end]
        positions = reader.position([TopicPartition(topic, p) for p in behind]) if behind else []
        for tp in positions:
            try:
                _low, high = reader.get_watermark_offsets(TopicPartition(topic, tp.partition),
                                                          cached=True)
            except KafkaException:
                return None
            if high < 0:  # no fetch response for it yet
                return None
            position = tp.offset if tp.offset >= 0 else self.positions.get(tp.partition, 0)
            lag += max(0, high - position)
        return lag

    def freshness(self) -> dict[str, Any]:
        """How fresh the views are: last fact time, per-shard sequence, lag in records, and
        per shard the time and age (by this process's clock) of its last ``CycleCompleted``."""
        now_ms = int(time.time() * 1000)
        # Facts held behind a shard_seq gap with nothing left to read: the fact missing will
        # not come (one the views dead-lettered, e.g. written with a newer schema than they
        # know), and every later fact of the shard waits for it. They said "caught up" so.
        held = {shard: {"waiting_for": self.views.shard_seq.get(shard, 0) + 1,
                        "held": len(facts)}
                for shard, facts in sorted(self.views.held.items()) if facts}
        return {
            "last_fact_ms": self.views.last_fact_ms,
            "shard_seq": dict(self.views.shard_seq),
            "lag_records": self.lag,
            "caught_up": self.caught_up.is_set() and not held,
            "held": held,
            "broker_unreachable_since_ms": self.broker.since_ms,
            "cycle_ms": dict(self.views.cycle_ms),
            "cycle_age_s": {shard: round(max(now_ms - ms, 0) / 1000, 3)
                            for shard, ms in sorted(self.views.cycle_ms.items())},
            "state_dir": [{"directory": t.directory, "problem": t.problem,
                           "since_ms": t.since_ms} for t in alarm.troubles()],
        }


def views_path(settings: Settings) -> Path:
    """Where the projections keep their RocksDB."""
    return settings.home / "projections" / "views.db"
