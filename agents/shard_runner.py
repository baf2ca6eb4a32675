"""One shard's scheduling loop: the imperative shell around the pure core.

For each batch of inbox records (in offset order) the runner

1. skips records at or below the shard's applied inbox offset (redelivery after a crash), and
   first reads any records the batch skipped over (a gap: faust's committed offset is only a
   hint; the shard's own state says where it stands);
2. decides each request with ``decide`` and folds the facts with ``evolve`` (pure), then runs one
   scheduling pass with ``schedule`` and closes the cycle with a ``CycleCompleted`` fact that
   records the inbox offsets the batch applied (a batch without facts is closed only when
   fair-share usage is due to accrue, ``scheduler.accrual_due``);
3. writes the facts to the ledger and the node commands to ``node-commands`` in **one Kafka
   transaction** (publish first: a crash before the commit leaves nothing visible);
4. writes the changed job and node rows and the meta to RocksDB in one atomic batch.

A crash between 3 and 4 leaves the ledger ahead of the local store; recovery folds the ledger's
tail (facts of this shard with a higher ``shard_seq``) into the stored state, so the state always
equals the fold of the ledger and nothing is decided twice. The transactional id is the shard's,
so a restarted owner fences its zombie predecessor before writing anything.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

import scheduler
from agents.shard_store import ShardStore
from schemas import DecodeError, decode, encode
from streams.clients import transactional_producer
from streams.ledger import read_ledger
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["InboxRecord", "ShardFencedError", "ShardRunner", "subject_of"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class InboxRecord:
    """One shard-inbox record as the runner needs it."""

    offset: int
    timestamp_ms: int
    value: bytes


class ShardFencedError(RuntimeError):
    """Another worker owns this shard now; this runner must stop."""


def subject_of(record: dict[str, Any]) -> str:
    """The key of a fact or command: the SLUID of what it is about."""
    for field_name in ("job_sluid", "node_sluid", "config_sluid"):
        value = record.get(field_name)
        if value:
            return str(value)
    return str(record["shard"])


@dataclass
class BatchStats:
    """What one batch did, for metrics and logs."""

    requests: int = 0
    facts: int = 0
    commands: int = 0
    decide_s: float = 0.0
    publish_s: float = 0.0
    persist_s: float = 0.0
    fact_names: list[str] = field(default_factory=list)


GapReader = Callable[[int, int], Iterable[InboxRecord]]


class ShardRunner:
    """The owner of one shard: its state, its RocksDB store and its transactional producer."""

    def __init__(
        self,
        settings: Settings,
        index: int,
        gap_reader: GapReader,
        on_batch: Callable[[BatchStats], None] | None = None,
    ) -> None:
        self.settings = settings
        self.index = index
        self.shard = settings.shard_name(index)
        self.topics = Topics(settings)
        self._gap_reader = gap_reader
        self._on_batch = on_batch
        path = Path(settings.home) / "worker" / f"shard-{self.shard}.db"
        self._store = ShardStore(path)
        self._producer: Producer = transactional_producer(
            settings.bootstrap, f"{settings.prefix}.shard.{self.shard}"
        )
        self._producer.init_transactions(30)
        self._positions: dict[int, int] = {}
        self.state = self._recover()
        # Records applied in memory that produced no facts (ticks, duplicates) are not
        # persisted; this remembers them so they do not look like a gap.
        self._seen_offset = self.state.inbox_offset

    # -- recovery -------------------------------------------------------------------------

    def _recover(self) -> scheduler.ShardState:
        snapshot = self._store.load()
        if snapshot is None:
            state = scheduler.initial_state(self.shard, self.settings.cluster_id)
            positions: dict[int, int] = {}
        else:
            state = scheduler.restore_state(snapshot.meta, snapshot.jobs, snapshot.nodes)
            positions = dict(snapshot.ledger_positions)
        tail = []
        for item in read_ledger(self.settings.bootstrap, self.topics.events, positions):
            positions[item.partition] = item.offset + 1
            rec = item.record
            if rec.get("shard") == self.shard and rec.get("shard_seq", 0) > state.shard_seq:
                tail.append((rec["shard_seq"], item.name, rec))
        tail.sort(key=lambda t: t[0])
        purged: set[str] = set()  # every cycle of the tail may purge jobs
        for seq, name, rec in tail:
            if seq != state.shard_seq + 1:
                raise RuntimeError(
                    f"ledger of shard {self.shard} has a gap: expected seq "
                    f"{state.shard_seq + 1}, found {seq}"
                )
            state = scheduler.evolve(state, scheduler.from_record(name, rec))
            purged.update(state.purged_jobs)
        self._positions = positions
        if tail or snapshot is None:
            self._persist(state, [rec for _, _, rec in tail], full=snapshot is None,
                          purged=purged)
        # The recovered state is long-lived: keep the cyclic collector from walking it in
        # every pass (a full collection costs ~0.4 s at 50,000 jobs).
        gc.freeze()
        log.info(
            "shard %s recovered: seq %d, inbox offset %d, %d facts from the ledger tail",
            self.shard, state.shard_seq, state.inbox_offset, len(tail),
        )
        return state

    # -- the batch loop -------------------------------------------------------------------

    def process(self, records: Sequence[InboxRecord]) -> BatchStats:
        """Apply one batch of inbox records (offset order); see the module docstring."""
        done = max(self.state.inbox_offset, self._seen_offset)
        fresh = [r for r in records if r.offset > done]
        if not fresh:
            return BatchStats()
        if fresh[0].offset > done + 1:
            missing = list(self._gap_reader(done + 1, fresh[0].offset))
            log.warning("shard %s: re-reading %d skipped inbox records", self.shard, len(missing))
            fresh = [r for r in missing if r.offset > done] + fresh
        stats = self._apply(fresh)
        self._seen_offset = fresh[-1].offset
        return stats

    def _apply(self, records: Sequence[InboxRecord]) -> BatchStats:
        stats = BatchStats(requests=len(records))
        started = time.perf_counter()
        state = self.state  # evolve updates it in place; a failed batch drops the runner
        facts: list[Any] = []
        commands: list[Any] = []
        now = state.now_ms
        for record in records:
            now = max(now, record.timestamp_ms)
            request = self._request(record)
            if request is None:
                continue
            state = self._fold(state, scheduler.decide(state, request, now), facts, commands)
        state = self._fold(state, scheduler.schedule(state, now), facts, commands)
        if facts or scheduler.accrual_due(state, now):  # a quiet shard still accrues usage
            close = scheduler.CloseCycle(
                inbox_partition=self.index, inbox_from=records[0].offset,
                inbox_to=records[-1].offset,
            )
            state = self._fold(state, scheduler.decide(state, close, now), facts, commands)
        stats.decide_s = time.perf_counter() - started
        if facts:
            self._publish(facts, commands, stats)
            persist_started = time.perf_counter()
            fact_records = [scheduler.as_record(f)[1] for f in facts]
            self._persist(state, fact_records)
            stats.persist_s = time.perf_counter() - persist_started
        # A batch with no facts changed nothing but the clock; it is not persisted, and its
        # records are decided again after a crash, which is harmless: nothing was published.
        self.state = state
        stats.facts, stats.commands = len(facts), len(commands)
        if self._on_batch is not None:
            self._on_batch(stats)
        return stats

    def _request(self, record: InboxRecord) -> Any | None:
        try:
            name, body = decode(record.value)
            return scheduler.from_record(name, body)
        except (DecodeError, KeyError, TypeError, ValueError) as exc:
            # The intake only forwards records it decoded; this is a bug or a foreign writer.
            log.error("shard %s: inbox offset %d is not a request: %s", self.shard,
                      record.offset, exc)
            return None

    @staticmethod
    def _fold(
        state: scheduler.ShardState, new: list[Any], facts: list[Any], commands: list[Any]
    ) -> scheduler.ShardState:
        for fact in new:
            state = scheduler.evolve(state, fact)
            commands.extend(scheduler.node_commands(state, fact))
        facts.extend(new)
        return state

    # -- effects --------------------------------------------------------------------------

    def _publish(self, facts: list[Any], commands: list[Any], stats: BatchStats) -> None:
        started = time.perf_counter()
        producer = self._producer
        positions = self._positions

        def delivered(error: KafkaError | None, message: Message) -> None:
            partition, offset = message.partition(), message.offset()
            if error is None and partition is not None and offset is not None:
                positions[partition] = max(positions.get(partition, 0), offset + 1)

        try:
            producer.begin_transaction()
            for fact in facts:
                name, body = scheduler.as_record(fact)
                stats.fact_names.append(name)
                producer.produce(
                    self.topics.events, encode(name, body), subject_of(body).encode(),
                    on_delivery=delivered,
                )
            for command in commands:
                name, body = scheduler.as_record(command)
                producer.produce(
                    self.topics.node_commands, encode(name, body), body["node_sluid"].encode()
                )
            producer.commit_transaction(60)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                KafkaError.INVALID_PRODUCER_EPOCH):
                raise ShardFencedError(f"shard {self.shard} is owned elsewhere now") from exc
            if error.txn_requires_abort():
                producer.abort_transaction(30)
            raise
        stats.publish_s = time.perf_counter() - started

    def _persist(
        self,
        state: scheduler.ShardState,
        fact_records: list[dict[str, Any]],
        full: bool = False,
        purged: set[str] | None = None,
    ) -> None:
        """Write the rows the batch's facts name, delete purged jobs, and the meta."""
        if full:
            jobs: dict[str, Any] = dict(state.jobs)
            nodes: dict[str, Any] = dict(state.nodes)
        else:
            jobs = {k: state.jobs.get(k) for k in _subjects(fact_records, "job_sluid")}
            nodes = {k: state.nodes.get(k) for k in _subjects(fact_records, "node_sluid")}
        # Ended jobs leave the state when a CycleCompleted purges them (MinJobAge).
        jobs.update(dict.fromkeys(sorted((purged or set()) | set(state.purged_jobs))))
        self._store.save(scheduler.state_meta(state), jobs, nodes, self._positions)

    def close(self) -> None:
        """Release the producer and the store (on revoke or shutdown)."""
        self._producer.flush(5)
        self._store.close()


def _subjects(records: list[dict[str, Any]], field_name: str) -> list[str]:
    return sorted({str(r[field_name]) for r in records if r.get(field_name)})
