"""A warm standby for a shard another worker owns: its local store kept close to the ledger.

Every worker of a group keeps, for each shard it does not own, the shard's RocksDB store
(``agents.shard_store``) folded up to the ledger's committed end, like a Kafka Streams standby
replica. When the owner dies and the shard moves here, :class:`~agents.shard_runner.ShardRunner`
recovers from that store and reads only the few facts written since the standby's last catch-up,
instead of folding the whole ledger (a cold rebuild). ``benchmarks/bench_worker_failover.py``
measures both.

The standby never decides anything: it folds the owner's facts (``scheduler.evolve``), in
``shard_seq`` order, exactly as recovery does. A fact read ahead of a missing one (the ledger's
partitions are read independently) waits in a buffer, and the stored ledger positions never pass
a buffered fact, so a store written by a standby is always a consistent prefix of the ledger.
``SLUICE_STANDBY=0`` turns standbys off (each takeover is then a cold rebuild).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

import scheduler
from agents.shard_store import ShardStore, store_path
from schemas import DecodeError, decode
from streams.clients import consumer
from streams.settings import Settings
from streams.state_dir import alarm, problem_of
from streams.topics import Topics

__all__ = ["ShardStandby", "Standbys"]

log = logging.getLogger(__name__)

_MAX_BUFFERED = 100_000
"""Facts held ahead of a missing one before the standby gives up and starts again."""


class ShardStandby:
    """Folds one shard's ledger facts into its local store while another worker owns it."""

    def __init__(self, settings: Settings, index: int) -> None:
        self.settings = settings
        self.shard = settings.shard_name(index)
        self.topic = Topics(settings).events
        self._store: ShardStore | None = None
        self._reader: Consumer | None = None
        self._state: Any = None
        self._positions: dict[int, int] = {}
        self._saved_positions: dict[int, int] = {}
        self._ahead: dict[int, tuple[int, int, str, dict[str, Any]]] = {}
        """Facts of this shard read ahead of a missing one: seq → (partition, offset, name, rec)."""

    def catch_up(self, max_records: int = 50_000) -> int:
        """Read what the ledger has committed since the last call and fold this shard's facts
        into the store; the number of facts folded."""
        if self._store is None:
            self._open()
        assert self._reader is not None
        changed: dict[str, set[str]] = {"job_sluid": set(), "node_sluid": set()}
        purged: set[str] = set()
        folded = 0
        read = 0
        while read < max_records:
            messages = self._reader.consume(num_messages=5000, timeout=0.05)
            if not messages:
                break
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        self._at_end(message.partition(), message.offset())
                    else:
                        log.warning("standby %s: ledger read error %s", self.shard, error)
                    continue
                read += 1
                partition, offset = message.partition(), message.offset()
                if partition is None or offset is None:
                    continue
                self._positions[partition] = offset + 1
                value = message.value()
                if value is None:
                    continue
                try:
                    name, record = decode(value)
                except DecodeError:
                    continue
                seq = record.get("shard_seq", 0)
                if record.get("shard") == self.shard and seq > self._state.shard_seq:
                    self._ahead[seq] = (partition, offset, name, record)
            folded += self._fold_ready(changed, purged)
        if len(self._ahead) > _MAX_BUFFERED:
            log.warning("standby %s: %d facts wait for a missing one; starting again",
                        self.shard, len(self._ahead))
            self.close()
            return folded
        if folded or self._positions != self._saved_positions:
            self._save(changed, purged)
        return folded

    def _at_end(self, partition: int | None, offset: int | None) -> None:
        """A partition read to its end: its position is known even if it had no record (so
        the new owner's recovery skips it)."""
        if partition is not None and offset is not None and offset >= 0:
            self._positions[partition] = max(self._positions.get(partition, 0), offset)

    def _fold_ready(self, changed: dict[str, set[str]], purged: set[str]) -> int:
        folded = 0
        while (entry := self._ahead.pop(self._state.shard_seq + 1, None)) is not None:
            _partition, _offset, name, record = entry
            self._state = scheduler.evolve(self._state, scheduler.from_record(name, record))
            purged.update(self._state.purged_jobs)
            for field_name, keys in changed.items():
                if record.get(field_name):
                    keys.add(str(record[field_name]))
            folded += 1
        return folded

    def _save(self, changed: dict[str, set[str]], purged: set[str]) -> None:
        """Persist the changed rows with positions that never pass a fact still buffered."""
        assert self._store is not None
        state = self._state
        jobs: dict[str, Any] = {k: state.jobs.get(k) for k in sorted(changed["job_sluid"])}
        nodes: dict[str, Any] = {k: state.nodes.get(k) for k in sorted(changed["node_sluid"])}
        jobs.update(dict.fromkeys(sorted(purged | set(state.purged_jobs))))
        positions = dict(self._positions)
        for partition, offset, _name, _record in self._ahead.values():
            positions[partition] = min(positions.get(partition, offset), offset)
        self._store.save(scheduler.state_meta(state), jobs, nodes, positions)
        self._saved_positions = dict(self._positions)

    def _open(self) -> None:
        self._store = ShardStore(store_path(self.settings.home, self.shard))
        try:
            self._load()
        except BaseException:
            self.close()
            raise

    def _load(self) -> None:
        assert self._store is not None
        snapshot = self._store.load()
        if snapshot is None:
            self._state = scheduler.initial_state(self.shard, self.settings.cluster_id)
            self._positions = {}
            # a fresh store: write it whole once, so a takeover finds a consistent snapshot
            self._store.save(scheduler.state_meta(self._state), {}, {}, {})
        else:
            self._state = scheduler.restore_state(snapshot.meta, snapshot.jobs, snapshot.nodes)
            self._positions = dict(snapshot.ledger_positions)
        self._saved_positions = dict(self._positions)
        self._ahead = {}
        self._reader = consumer(self.settings.bootstrap)
        partitions = self._reader.list_topics(self.topic, timeout=10).topics[self.topic].partitions
        self._reader.assign([
            TopicPartition(self.topic, p, self._positions.get(p, OFFSET_BEGINNING))
            for p in sorted(partitions)
        ])

    def close(self) -> None:
        """Release the store (the shard's new owner opens it) and the ledger reader."""
        reader, store = self._reader, self._store
        self._reader = self._store = None
        self._state = None
        self._ahead = {}
        try:
            if reader is not None:
                reader.close()
        finally:
            if store is not None:  # always: the owner cannot open a store whose lock is held
                store.close()


class Standbys:
    """The standbys of one worker: one per shard it does not own."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._by_index: dict[int, ShardStandby] = {}

    def catch_up(self, owned: Collection[int]) -> None:
        """Fold new facts into the store of every shard not in ``owned``."""
        for index in range(self.settings.shards):
            if index in owned:
                continue
            standby = self._by_index.get(index)
            if standby is None:
                standby = self._by_index[index] = ShardStandby(self.settings, index)
            try:
                folded = standby.catch_up()
            except Exception as exc:
                problem = problem_of(exc)
                if problem is None:
                    log.exception("the standby of shard %d failed; it starts again", index)
                else:  # a full or read-only state directory: one line a minute at most
                    alarm.failed(Path(self.settings.home) / "worker", problem,
                                 f"the standby of shard {index}")
                self.release(index)
                continue
            if folded:
                log.debug("the standby of shard %d folded %d facts", index, folded)

    def release(self, index: int) -> None:
        """Close the standby of ``index`` (before its new owner opens the store)."""
        standby = self._by_index.pop(index, None)
        if standby is not None:
            standby.close()

    def close_all(self) -> None:
        """Close every standby (the worker stops)."""
        for index in sorted(self._by_index):
            self.release(index)
