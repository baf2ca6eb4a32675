"""Replay: the queue and the nodes as they were at any time, from the ledger alone.

:func:`read_facts` reads every partition of the ledger (read-committed) and :func:`merge`
puts the facts back in decision order: each shard's facts by ``shard_seq`` (checked gap-free),
the shards interleaved by ``(time_ms, shard, shard_seq)``. :func:`views_at` folds that order
with the same :class:`~projections.views.Views` the live projections use, stopping after the
last fact decided at or before the requested time. :func:`format_queue` and
:func:`format_nodes` print them like ``squeue`` and ``sinfo -N`` (state codes from
:mod:`projections.job_states`, shared with ``sluice queue``).
"""

from __future__ import annotations

import gc
import heapq
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from projections.job_states import short_state
from projections.views import ACTIVE_STATES, Views
from schemas import DecodeError, decode
from schemas.digits import ascii_whole
from schemas.ranges import MAX_TIME_MS
from streams.clients import consumer
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["Batch", "Fact", "LedgerGapError", "format_nodes", "format_queue", "merge",
           "parse_time", "paused_gc", "read_batches", "read_facts", "views_at"]


class Fact(NamedTuple):
    """One ledger fact, with where it was read (a named tuple: made from a read's
    ``(name, record, partition, offset)`` by ``Fact._make`` in C)."""

    name: str
    record: dict[str, Any]
    partition: int
    offset: int

    @property
    def shard(self) -> str:
        return str(self.record["shard"])

    @property
    def seq(self) -> int:
        return int(self.record["shard_seq"])

    @property
    def time_ms(self) -> int:
        return int(self.record["time_ms"])


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside: reading a ledger allocates millions of dicts and
    no cycles, and the collector's passes over them would take half the time.

    What survives the pause goes to the oldest generation (``gc.freeze`` then
    ``gc.unfreeze``), where the next full collection, when the collector's own rule calls
    for it, sees it: left in the youngest, every object allocated inside would be scanned by
    the first young collection after it (a third of a replay's time) and again by the next.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()


class LedgerGapError(RuntimeError):
    """A shard's sequence has a gap or a duplicate: the ledger read is incomplete."""


def read_facts(settings: Settings, topic: str | None = None) -> list[Fact]:
    """Every fact of the ledger as it stands now, in read order (not yet merged).

    All partitions are read at once (read-committed) up to the end each had when reading
    began; the end of a partition is known from its end-of-partition event, so the transaction
    markers after the last fact cost no wait.
    """
    topic = topic or Topics(settings).events
    # librdkafka's default fetch sizes read fastest here (larger ones were 5x slower).
    reader = consumer(settings.bootstrap, overrides={"fetch.wait.max.ms": 20})
    facts: list[Fact] = []
    try:
        with paused_gc():
            _read_all(reader, topic, facts)
    finally:
        reader.close()
    return facts


def _read_all(reader: Any, topic: str, facts: list[Fact]) -> None:
    """Read and decode every partition of ``topic`` to its end into ``facts``."""
    for batch in read_batches(reader, topic):
        facts.extend(map(Fact._make, batch))


Batch = list[tuple[str, dict[str, Any], int, int]]
"""Facts as ``(name, record, partition, offset)``, in read order."""


def read_batches(reader: Any, topic: str, largest: int = 0) -> Iterator[Batch]:
    """Every fact of every partition of ``topic`` to the end it had when reading began, decoded,
    in batches as the reader fetched them, of at most ``largest`` facts when it is not 0 (a
    record that does not decode, and a record that is not a fact, is skipped)."""
    partitions = sorted(reader.list_topics(topic, timeout=10).topics[topic].partitions)
    ends = {}
    for p in partitions:
        _low, high = reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        ends[p] = high
    open_parts = {p for p, end in ends.items() if end > 0}
    reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(open_parts)])
    while open_parts:
        messages: list[Any] = reader.consume(num_messages=10000, timeout=0.05)
        batch: Batch = []
        for message in messages:
            partition = message.partition()
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF and message.offset() >= ends[
                        partition]:
                    open_parts.discard(partition)
                elif error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(error)
                continue
            offset = message.offset()
            if offset >= ends[partition]:
                open_parts.discard(partition)
                continue
            try:
                name, record = decode(message.value())
            except DecodeError:
                continue
            if "shard_seq" in record:
                batch.append((name, record, partition, offset))
                if len(batch) == largest:  # handed on as soon as decoded: the fold starts early
                    yield batch
                    batch = []
        if batch:
            yield batch


def by_shard(facts: Iterable[Fact]) -> dict[str, list[Fact]]:
    """Each shard's facts in ``shard_seq`` order; raises on a gap or a duplicate."""
    shards: dict[str, list[Fact]] = {}
    for fact in facts:
        shard = str(fact.record["shard"])
        items = shards.get(shard)
        if items is None:
            items = shards[shard] = []
        items.append(fact)
    for shard, items in shards.items():
        placed = _in_sequence(items)
        if placed is None:
            items.sort(key=_seq)
            expected, found = next((n, seq) for n, seq in enumerate(map(_seq, items), start=1)
                                   if seq != n)
            raise LedgerGapError(f"shard {shard}: expected shard_seq {expected}, found {found}")
        shards[shard] = placed
    return shards


def _in_sequence(items: list[Fact]) -> list[Fact] | None:
    """``items`` in ``shard_seq`` order when their sequences are exactly 1 to ``len(items)``
    (each fact put at its place: no sort), else None."""
    size = len(items)
    placed: list[Fact | None] = [None] * size
    for fact in items:
        seq = int(fact.record["shard_seq"])
        if not 0 < seq <= size or placed[seq - 1] is not None:
            return None
        placed[seq - 1] = fact
    return cast("list[Fact]", placed)  # as many facts as places, each in its own: all filled


def _seq(fact: Fact) -> int:
    return int(fact.record["shard_seq"])


def _order(fact: Fact) -> tuple[int, str, int]:
    record = fact.record
    return int(record["time_ms"]), str(record["shard"]), int(record["shard_seq"])


def merge(facts: Iterable[Fact]) -> Iterator[Fact]:
    """Decision order: by shard sequence, shards interleaved by time."""
    shards = by_shard(facts)
    yield from heapq.merge(*shards.values(), key=_order)


def views_at(facts: Iterable[Fact], at_ms: int | None = None,
             advance: Callable[[int], None] | None = None) -> Views:
    """The views after every fact decided at or before ``at_ms`` (all facts if None);
    ``advance`` (a progress bar's) is told of every 1000 facts folded."""
    views = Views()
    with paused_gc():
        views.fold_merged(merge(facts), at_ms, advance)
    return views


def parse_time(text: str) -> int:
    """Unix ms from ``2026-01-01T12:00:00[.123][Z|+02:00]`` (UTC when no zone), or from ms,
    from 1970 to the end of year 9999; ValueError (naming ``--at``) otherwise."""
    value = text.strip()
    try:
        if value.isascii() and value.isdigit():
            ms = ascii_whole(value, len(str(MAX_TIME_MS)))
            ms = MAX_TIME_MS + 1 if ms is None else ms
        else:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            ms = int(moment.timestamp() * 1000)
    except ValueError:
        ms = -1
    if not 0 <= ms <= MAX_TIME_MS:
        raise ValueError(f"--at {text[:40]!r}: use an ISO time (2026-01-01T12:00:00Z) or Unix ms, "
                         f"from 1970 to the end of year 9999")
    return ms


def iso(ms: int) -> str:
    """Unix ms as ``2026-01-01T12:00:00.123Z``; a time outside 1970 … 9999 (a ledger any
    PLAINTEXT client could write carries any ``long``) as ``<ms> ms``: ``sluice audit``
    stopped with ``year 292278994 is out of range`` on one such fact (red team)."""
    if not 0 <= ms <= MAX_TIME_MS:
        return f"{ms} ms"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def format_queue(views: Views, at_ms: int) -> list[str]:
    """squeue at ``at_ms``: pending and running jobs with reasons and elapsed time."""
    lines = [f"{'JOBID':>8} {'PARTITION':<10} {'NAME':<12} {'USER':<10} {'ST':<3} "
             f"{'TIME':>10} {'NODES':>5} NODELIST(REASON)"]
    jobs = sorted((j for j in views.jobs.values() if j["state"] in ACTIVE_STATES),
                  key=lambda j: (j.get("job_id") or 0, j["job_sluid"]))
    for job in jobs:
        running = job["state"] == "RUNNING"
        on_nodes = running or "COMPLETING" in job["flags"]  # squeue lists a CG job's nodes
        elapsed = max(at_ms - job["start_ms"], 0) // 1000 if running else 0
        where = ",".join(job["nodes"]) if on_nodes else f"({job['reason']})"
        count = len(job["nodes"]) if on_nodes else job.get("nodes_min", 1)
        lines.append(f"{job['job_id']:>8} {job['partition'] or '-':<10} {job['name'][:12]:<12} "
                     f"{job['user'][:10]:<10} {short_state(job['state'], job['flags']):<3} "
                     f"{_duration(elapsed):>10} {count:>5} {where}")
    return lines


def format_nodes(views: Views) -> list[str]:
    """sinfo -N: one line per node with its state, block and the jobs it runs."""
    lines = [f"{'NODELIST':<16} {'STATE':<10} {'CPUS':>5} {'GPUS':>5} {'PARTITION':<12} "
             f"{'BLOCK':<8} JOBS"]
    for name in sorted(views.nodes):
        node = views.nodes[name]
        lines.append(f"{name:<16} {str(node.get('state', '')).lower():<10} "
                     f"{node.get('cpus', 0):>5} {node.get('gpus', 0):>5} "
                     f"{','.join(node.get('partitions', [])) or '-':<12} "
                     f"{node.get('block') or '-':<8} "
                     f"{','.join(str(j) for j in node.get('jobs', []))}")
    return lines


def _duration(seconds: int) -> str:
    days, rest = divmod(max(seconds, 0), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"
