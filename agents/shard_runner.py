"""One shard's scheduling loop: the imperative shell around the pure core.

For each batch of inbox records (in offset order) the runner

1. skips records at or below the shard's applied inbox offset (redelivery after a crash), and
   reads directly any offsets the batch skips over, before its first record or between two of
   its records (the shard loop reads its partition from :attr:`ShardRunner.next_offset`, but a
   batch may still start past it: the runner opened late, records skipped while it was fenced;
   the shard's own state says where it stands); only the offsets an unreadable record's marker
   stands for are not;
2. opens each record's seal (``agents.auth.seal``): a record the worker's intake, clock or
   health agent did not seal, or a sealed one seen before, is ignored; the sealed stamp (never
   the record's own timestamp or time fields) is the time it is decided at, and a request from
   the intake is decided for the identity the intake sealed (``scheduler.Attributed``);
3. runs one cycle of the core (``scheduler.run_cycle``, the same function ``sluice verify`` and
   the simulator run): each request decided and folded, one scheduling pass, and a
   ``CycleCompleted`` fact recording the inbox offsets the batch applied when the core's close
   rule says so (``scheduler.cycle_closes``: the batch has facts, or a purge or an accrual is
   due). Every fact and command is Avro-encoded inside the cycle, before anything is written;
   a request that raises (in deciding, encoding or folding) is refused with ``InternalError``,
   logged with its inbox offset and counted, and the batch goes on (docs/scheduling.md, "One
   cycle"), so a bad request can never make the shard retry a batch for ever;
4. writes the facts to the ledger and the node commands to ``node-commands`` in **one Kafka
   transaction** (publish first: a crash before the commit leaves nothing visible);
5. writes the changed job and node rows and the meta to RocksDB in one atomic batch.

A crash between 4 and 5 leaves the ledger ahead of the local store; recovery folds the ledger's
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
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

import scheduler
from agents.auth.command_signature import CommandSigner
from agents.auth.node_keys import ensure_keys, load_command_private
from agents.auth.seal import SealChecker, worker_secret
from agents.inbox_records import open_inbox_record
from agents.offset_gaps import Take, plan_partition
from agents.shard_store import ShardSnapshot, ShardStore, store_path
from scheduler.records import COMMAND_NAMES
from schemas import encode
from schemas.sluid import is_sluid
from streams.clients import transactional_producer
from streams.ledger import read_ledger
from streams.settings import Settings
from streams.stale_store import past_the_end
from streams.topics import Topics

__all__ = ["InboxRecord", "ShardFencedError", "ShardRunner", "row_keys", "subject_of"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class InboxRecord:
    """One shard-inbox record as the runner needs it."""

    offset: int
    timestamp_ms: int
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()
    """The record's headers: the worker's seal, and the intake's ``sluice-refused`` mark."""
    last: int = -1
    """The last offset the record stands for when it is the marker of a batch the worker could
    not read (dead-lettered: ``offset..last`` decide nothing and are not a gap); else -1."""

    @property
    def last_offset(self) -> int:
        """The last inbox offset this record covers."""
        return max(self.offset, self.last)


GapReader = Callable[[int, int], Iterable[InboxRecord]]
"""Reads the inbox records at offsets ``[first, end)`` of the shard's partition directly."""


class ShardFencedError(RuntimeError):
    """Another worker owns this shard now; this runner must stop."""


def with_gaps(done: int, records: Sequence[InboxRecord], read: GapReader,
              shard: str = "") -> list[InboxRecord]:
    """The records of a batch (offset order) past ``done``, with the offsets the batch skips
    over read in by ``read(first, end)``: before its first record and between two records
    (:func:`agents.offset_gaps.plan_partition`, the intake's planner)."""
    plan = plan_partition(done + 1, [(r.offset, r.last_offset) for r in records])
    out: list[InboxRecord] = []
    for step in plan.steps:
        if isinstance(step, Take):
            out.append(records[step.index])
            continue
        missing = [r for r in read(step.first, step.end) if step.first <= r.offset < step.end]
        log.warning("shard %s: read %d skipped inbox records (offsets %d..%d) directly",
                    shard, len(missing), step.first, step.end - 1)
        out.extend(missing)
    return out


def subject_of(record: dict[str, Any]) -> str:
    """The key of a fact or command: the SLUID of what it is about.

    A ``RequestDenied`` is keyed by the job or node its request named (``subject_sluid``), so
    a search of the ledger by that SLUID finds the refusal beside the subject's other facts; a
    subject that is not a SLUID (the request named garbage) or none keys it by the shard.
    """
    for field_name in ("job_sluid", "node_sluid", "config_sluid"):
        value = record.get(field_name)
        if value:
            return str(value)
    subject = record.get("subject_sluid")
    if subject and is_sluid(str(subject)):
        return str(subject)
    return str(record["shard"])


@dataclass
class BatchStats:
    """What one batch did, for metrics and logs."""

    requests: int = 0
    facts: int = 0
    commands: int = 0
    failed_requests: int = 0
    failed_passes: int = 0
    decide_s: float = 0.0
    publish_s: float = 0.0
    persist_s: float = 0.0
    fact_names: list[str] = field(default_factory=list)


Encoded = tuple[str, bytes, bytes]
"""A record as written: its name, its Kafka key and its Avro value."""
Signed = tuple[bytes, bytes, list[tuple[str, str | bytes | None]]]
"""A node command as written: its key, its Avro value and its signature header."""
_COMMANDS = COMMAND_NAMES  # keyed by their node: LaunchRun, KillRun, LaunchStep, KillStep


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
        started = time.perf_counter()
        self._store = ShardStore(store_path(settings.home, self.shard))
        try:  # the store's lock must not outlive a runner that failed to start
            self._producer: Producer = transactional_producer(
                settings.bootstrap, f"{settings.prefix}.shard.{self.shard}"
            )
            self._producer.init_transactions(30)  # fences the previous owner (may wait for it)
            self._fenced_s = time.perf_counter() - started
            self._positions: dict[int, int] = {}
            self._secret = worker_secret(settings.home)
            self._seals = SealChecker()
            ensure_keys(settings, env=False)  # made on the first start, like the worker secret
            self._signer = CommandSigner(load_command_private(settings), settings.cluster,
                                         settings.command_ttl_s)
            self.ignored = 0
            self.state = self._recover()
        except BaseException:
            self._store.close()
            raise
        # Records applied in memory that produced no facts (ticks, duplicates) are not
        # persisted; this remembers them so they do not look like a gap.
        self._seen_offset = self.state.inbox_offset

    @property
    def next_offset(self) -> int:
        """The first inbox offset this shard has not applied: where its partition is read
        from when it is assigned here."""
        return max(self.state.inbox_offset, self._seen_offset) + 1

    # -- recovery -------------------------------------------------------------------------

    def _recover(self) -> scheduler.ShardState:
        started = time.perf_counter()
        snapshot = self._store.load()
        if snapshot is not None and (ahead := self._past_the_end(snapshot)):
            self._store.set_aside(f"past the end of the broker's topics: {'; '.join(ahead)}: "
                                  "folded from another ledger (a broker or its topics reset?)")
            snapshot = None
        loaded = time.perf_counter()
        if snapshot is None:
            state = scheduler.initial_state(self.shard, self.settings.cluster_id)
            positions: dict[int, int] = {}
        else:
            state = scheduler.restore_state(snapshot.meta, snapshot.jobs, snapshot.nodes)
            positions = dict(snapshot.ledger_positions)
            healed = sorted(s for s, node in state.nodes.items()
                            if node.superseded and not snapshot.nodes[s].superseded)
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
        if snapshot is not None and healed:  # a store of an earlier version: see restore_state
            log.warning("shard %s: nodes %s had a name registered again under another SLUID; "
                        "their rows now say so", self.shard, ", ".join(healed))
            self._store.save(scheduler.state_meta(state), {},
                             {s: state.nodes[s] for s in healed}, self._positions)
        if tail or snapshot is None:
            self._persist(state, [(name, rec) for _, name, rec in tail],
                          full=snapshot is None, purged=purged)
        # The recovered state is long-lived: keep the cyclic collector from walking it in
        # every pass (a full collection costs ~0.4 s at 50,000 jobs).
        gc.freeze()
        log.info(
            "shard %s recovered: seq %d, inbox offset %d, %d facts from the ledger tail "
            "(fencing %.2f s, store %.2f s, ledger tail %.2f s)",
            self.shard, state.shard_seq, state.inbox_offset, len(tail), self._fenced_s,
            loaded - started, time.perf_counter() - loaded,
        )
        return state

    def _past_the_end(self, snapshot: ShardSnapshot) -> list[str]:
        """The snapshot's positions (ledger partitions, this shard's inbox) past the end of
        the broker's topics (``streams.stale_store``)."""
        inbox = int(snapshot.meta.inbox_offset) + 1
        return past_the_end(self.settings.bootstrap, {
            self.topics.events: snapshot.ledger_positions,
            self.topics.shard_inbox: {self.index: inbox}})

    # -- the batch loop -------------------------------------------------------------------

    def process(self, records: Sequence[InboxRecord]) -> BatchStats:
        """Apply one batch of inbox records (offset order); see the module docstring."""
        done = max(self.state.inbox_offset, self._seen_offset)
        fresh = with_gaps(done, records, self._gap_reader, self.shard)
        if not fresh:
            return BatchStats()
        stats = self._apply(fresh)
        self._seen_offset = fresh[-1].last_offset
        return stats

    def _apply(self, records: Sequence[InboxRecord]) -> BatchStats:
        stats = BatchStats(requests=len(records))
        started = time.perf_counter()
        requests = []
        now = self.state.now_ms
        for record in records:
            opened = open_inbox_record(record, self._secret, self._seals, now)
            if isinstance(opened, str):
                self.ignored += 1
                log.warning("shard %s: inbox offset %d ignored: %s", self.shard, record.offset,
                            opened)
                continue
            request, stamp_ms = opened
            now = max(now, stamp_ms)
            requests.append(scheduler.Timed(record.offset, stamp_ms, request))
        inbox = scheduler.InboxRange(self.index, records[0].offset, records[-1].last_offset)
        # evolve updates self.state in place; a failing request is rolled back with _reload
        result = scheduler.run_cycle(self.state, requests, inbox, now, encode=self._encode,
                                     reload=self._reload)
        for failure in result.failures:
            where = "the scheduling pass" if failure.position < 0 else (
                f"inbox offset {failure.position} ({failure.request})")
            log.error("shard %s: %s failed in %s and was refused: %r", self.shard, where,
                      failure.stage, failure.error, exc_info=failure.error)
        stats.failed_requests = sum(1 for f in result.failures if f.position >= 0)
        stats.failed_passes = int(result.pass_failed)
        state = result.state
        stats.decide_s = time.perf_counter() - started
        if result.facts:
            self._publish(result.encoded_facts, self._signed(result), stats)
            persist_started = time.perf_counter()
            self._persist(state, [row_keys(f) for f in result.facts])
            stats.persist_s = time.perf_counter() - persist_started
        # A batch with no facts changed nothing but the clock; it is not persisted, and its
        # records are decided again after a crash, which is harmless: nothing was published.
        self.state = state
        stats.facts, stats.commands = len(result.facts), len(result.commands)
        if self._on_batch is not None:
            self._on_batch(stats)
        return stats

    def _encode(self, obj: Any) -> Encoded:
        """A fact or node command as it is written: (record name, key, Avro bytes); raises
        ``EncodeError`` before anything is written when it does not fit its schema."""
        name, body = scheduler.as_record(obj)
        key = body["node_sluid"] if name in _COMMANDS else subject_of(body)
        return name, key.encode(), encode(name, body)

    def _reload(self) -> scheduler.ShardState:
        """The state as of the last persisted batch: the start of the running cycle."""
        snapshot = self._store.load()
        if snapshot is None:
            return scheduler.initial_state(self.shard, self.settings.cluster_id)
        return scheduler.restore_state(snapshot.meta, snapshot.jobs, snapshot.nodes)

    # -- effects --------------------------------------------------------------------------

    def _signed(self, result: scheduler.CycleResult[Encoded]) -> list[Signed]:
        """Each encoded node command with its signature header (the shell's clock sets the
        expiry; the core stays pure: docs/security.md, "Signed node commands")."""
        now_ms = int(time.time() * 1000)
        signed: list[Signed] = []
        seen: set[tuple[bytes, bytes]] = set()
        for command, (_name, key, value) in zip(result.commands, result.encoded_commands,
                                                strict=True):
            if (key, value) in seen:  # the same kill twice in one batch: a node runs it once
                continue
            seen.add((key, value))
            run_sluid = getattr(command, "run_sluid", "")  # RequestRegistration: no run
            header = self._signer.header(key.decode(), run_sluid, value, now_ms)
            signed.append((key, value, [header]))
        return signed

    def _publish(self, facts: list[Encoded], commands: list[Signed], stats: BatchStats) -> None:
        """Write the encoded facts and node commands in one transaction."""
        started = time.perf_counter()
        producer = self._producer
        positions = self._positions

        def delivered(error: KafkaError | None, message: Message) -> None:
            partition, offset = message.partition(), message.offset()
            if error is None and partition is not None and offset is not None:
                positions[partition] = max(positions.get(partition, 0), offset + 1)

        produce, events, named = producer.produce, self.topics.events, stats.fact_names.append
        try:
            producer.begin_transaction()
            for name, key, value in facts:
                named(name)
                produce(events, value, key, on_delivery=delivered)
            for key, value, headers in commands:
                produce(self.topics.node_commands, value, key, headers=headers)
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
        facts: list[tuple[str, dict[str, Any]]],
        full: bool = False,
        purged: set[str] | None = None,
    ) -> None:
        """Write the rows the batch's facts (``(name, record)``) changed, delete purged jobs,
        and the meta."""
        if full:
            jobs: dict[str, Any] = dict(state.jobs)
            nodes: dict[str, Any] = dict(state.nodes)
        else:
            jobs = {k: state.jobs.get(k) for k in _subjects([r for _, r in facts], "job_sluid")}
            nodes = {k: state.nodes.get(k) for k in scheduler.node_rows_changed(state, facts)}
        # Ended jobs leave the state when a CycleCompleted purges them (MinJobAge).
        jobs.update(dict.fromkeys(sorted((purged or set()) | set(state.purged_jobs))))
        self._store.save(scheduler.state_meta(state), jobs, nodes, self._positions)

    def close(self) -> None:
        """Release the producer and the store (on revoke, fence or shutdown). The store is
        closed whatever the producer says: a fenced producer's flush fails, and a store left
        open keeps its lock, so no later owner in this process could open it."""
        try:
            self._producer.flush(5)
        except KafkaException as exc:
            log.info("shard %s: the producer's last flush failed (%s)", self.shard, exc)
        finally:
            self._store.close()


_ROW_FIELDS = ("job_sluid", "node_sluid", "name")


def row_keys(fact: object) -> tuple[str, dict[str, Any]]:
    """A fact's record name and the fields of it that say which rows it changed (all that
    ``_persist`` reads: ``job_sluid``, ``node_sluid``, a ``NodeRegistered``'s ``name``), as
    ``as_record`` would give them, without converting the whole fact (a ``JobQueued`` is 47
    fields and its spec: ~7 µs a submission)."""
    cls = type(fact)
    fields = _ROW_FIELDS_OF.get(cls)
    if fields is None:
        fields = _ROW_FIELDS_OF[cls] = tuple(k for k in _ROW_FIELDS if hasattr(fact, k))
    return cls.__name__, {k: getattr(fact, k) for k in fields}


_ROW_FIELDS_OF: dict[type, tuple[str, ...]] = {}


def _subjects(records: list[dict[str, Any]], field_name: str) -> list[str]:
    return sorted({str(r[field_name]) for r in records if r.get(field_name)})
