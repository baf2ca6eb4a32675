"""The projections service: folds the ledger into views, keeps them in RocksDB, serves them.

One process reads every partition of the ledger (``read_committed``) from the positions stored
with its views, so a restart resumes where it stopped and ``--rebuild`` starts over from the
beginning of the ledger. After each batch, the changed rows and the new positions are written in
one atomic RocksDB batch. The HTTP JSON API (``projections.http``) reads the in-memory views.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from projections.views import Touched, Views
from schemas import DecodeError, decode
from streams.clients import consumer, ready_messages
from streams.dead_letters import DeadLetterWriter
from streams.rocks import RocksStore
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["ProjectionService"]

log = logging.getLogger(__name__)

_UNREADABLE = frozenset({KafkaError._BAD_MSG, KafkaError._BAD_COMPRESSION})
"""librdkafka's errors for a record (batch) it fetched but cannot read."""

FactListener = Callable[[str, dict[str, Any], int], None]


class ProjectionService:
    """Ledger → views; ``run()`` blocks until ``stop()``."""

    def __init__(self, settings: Settings, rebuild: bool = False) -> None:
        self.settings = settings
        self.topics = Topics(settings)
        path = settings.home / "projections" / "views.db"
        if rebuild and path.exists():
            RocksStore.destroy(path)
        self.store = RocksStore(path)
        self.views = Views()
        self.positions: dict[int, int] = {}
        self.lock = threading.RLock()
        self.folded = threading.Condition(self.lock)
        """Notified after each folded batch (``projections.decisions`` waits on it)."""
        self.listeners: list[FactListener] = []
        self.caught_up = threading.Event()
        self.lag = 0
        self._at_end: set[int] = set()
        self._stopping = threading.Event()
        self._dead_letters = DeadLetterWriter(settings)
        self._load()

    def _load(self) -> None:
        for key, value in self.store.items(b"job:"):
            row = json.loads(value)
            self.views.jobs[key[4:].decode()] = row
            if row.get("job_id"):
                self.views.job_ids[int(row["job_id"])] = row["job_sluid"]
        for key, value in self.store.items(b"node:"):
            self.views.nodes[key[5:].decode()] = json.loads(value)
        meta = self.store.get(b"meta")
        if meta is not None:
            data = json.loads(meta)
            self.views.shard_seq = data["shard_seq"]
            self.views.last_fact_ms = data["last_fact_ms"]
            self.views.cycle_ms = data.get("cycle_ms", {})
            self.views.configs = data.get("configs", {})
            self.positions = {int(p): o for p, o in data["positions"].items()}

    def stop(self) -> None:
        """Ask ``run`` to return."""
        self._stopping.set()

    def run(self) -> None:
        """Consume the ledger until stopped."""
        reader = consumer(self.settings.bootstrap)
        topic = self.topics.events
        partitions = sorted(reader.list_topics(topic, timeout=10).topics[topic].partitions)
        reader.assign([
            TopicPartition(topic, p, self.positions.get(p, OFFSET_BEGINNING)) for p in partitions
        ])
        last_lag_check = 0.0
        try:
            while not self._stopping.is_set():
                messages = ready_messages(reader, 2000, 0.05)  # no wait once one is there
                self._apply_batch(messages)
                if time.monotonic() - last_lag_check > 1.0 or not messages:
                    self.lag = self._lag(reader, topic, partitions)
                    if self.lag == 0:
                        self.caught_up.set()
                    last_lag_check = time.monotonic()
        finally:
            reader.close()
            self.store.close()

    def _apply_batch(self, messages: list[Any]) -> None:
        touched = Touched()
        with self.lock:
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
                    continue
                result = self.views.apply(name, record)
                if result is None:
                    continue
                touched.jobs |= result.jobs
                touched.nodes |= result.nodes
                for listener in self.listeners:
                    listener(name, record, message.timestamp()[1])
            if messages:
                self._persist(touched)
                self.folded.notify_all()

    def _persist(self, touched: Touched) -> None:
        puts = {f"job:{k}".encode(): json.dumps(self.views.jobs[k]).encode()
                for k in sorted(touched.jobs) if k in self.views.jobs}
        puts.update({f"node:{k}".encode(): json.dumps(self.views.nodes[k]).encode()
                     for k in sorted(touched.nodes) if k in self.views.nodes})
        puts[b"meta"] = json.dumps({
            "shard_seq": self.views.shard_seq, "last_fact_ms": self.views.last_fact_ms,
            "cycle_ms": self.views.cycle_ms,
            "positions": self.positions, "configs": self.views.configs,
        }).encode()
        self.store.write(puts)

    def _lag(self, reader: Any, topic: str, partitions: list[int]) -> int:
        # A partition that reported its end since its last record is caught up: the offsets
        # past its last record are transaction markers, which a reader never receives.
        lag = 0
        behind = [p for p in partitions if p not in self._at_end]
        positions = reader.position([TopicPartition(topic, p) for p in behind]) if behind else []
        for tp in positions:
            try:
                _low, high = reader.get_watermark_offsets(TopicPartition(topic, tp.partition),
                                                          timeout=2, cached=False)
            except Exception:
                continue
            position = tp.offset if tp.offset >= 0 else self.positions.get(tp.partition, 0)
            lag += max(0, high - position)
        return lag

    def freshness(self) -> dict[str, Any]:
        """How fresh the views are: last fact time, per-shard sequence, lag in records, and
        per shard the time and age (by this process's clock) of its last ``CycleCompleted``."""
        now_ms = int(time.time() * 1000)
        return {
            "last_fact_ms": self.views.last_fact_ms,
            "shard_seq": dict(self.views.shard_seq),
            "lag_records": self.lag,
            "caught_up": self.caught_up.is_set(),
            "cycle_ms": dict(self.views.cycle_ms),
            "cycle_age_s": {shard: round(max(now_ms - ms, 0) / 1000, 3)
                            for shard, ms in sorted(self.views.cycle_ms.items())},
        }


def views_path(settings: Settings) -> Path:
    """Where the projections keep their RocksDB."""
    return settings.home / "projections" / "views.db"
