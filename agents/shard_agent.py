"""The shard scheduler agent: one owner per shard-inbox partition.

faust assigns each inbox partition to exactly one worker of the consumer group; this agent keeps
one :class:`~agents.shard_runner.ShardRunner` per partition it owns, hands it batches from
``take_ready`` (agents.batching) in offset order, and drops it when the partition is revoked.
The runner's work (the core, a Kafka transaction, a RocksDB batch) runs on one dedicated
thread, so the event loop keeps heartbeating while a large batch is decided.

For every shard it does not own, the worker keeps a warm standby (``agents.shard_standby``):
once a second (``SLUICE_STANDBY_INTERVAL``) it folds the ledger's new facts into that shard's
local store, on the same thread, so a takeover recovers from a store that is seconds behind
instead of folding the whole ledger. The standby is closed before the shard's runner opens
the store.

A worker decides a partition's records only while the group assigns it the partition, and
waits a session after its runner is fenced (``agents.shard_ownership``): a worker that stalled
past its session must not fence the shard's new owner with the records it still holds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.batching import take_ready
from agents.fetch_guard import UnreadableBatch, dead_letter_for
from agents.forwarding import DurableSender
from agents.gap_reader import read_range
from agents.metrics import observe_batch
from agents.shard_ownership import Ownership
from agents.shard_runner import InboxRecord, ShardFencedError, ShardRunner
from agents.shard_standby import Standbys

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agents.app import WorkerContext

__all__ = ["install_shard_agent"]

log = logging.getLogger(__name__)


def install_shard_agent(context: WorkerContext, batch_max: int, within_s: float,
                        fence_backoff_s: float = 10.0) -> None:
    """Register the shard scheduler agent on the worker's app."""
    app = context.app
    runners: dict[int, ShardRunner] = {}
    ownership = Ownership(fence_backoff_s)
    standbys = Standbys(context.settings)
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shard")

    def runner_for(index: int) -> ShardRunner:
        runner = runners.get(index)
        if runner is None:
            standbys.release(index)
            shard = context.settings.shard_name(index)
            runner = ShardRunner(context.settings, index, _gap_reader(context, index),
                                 on_batch=lambda stats: observe_batch(shard, stats))
            runners[index] = runner
            _record_owned(context.settings.home, runners)
        return runner

    def process(index: int, records: list[InboxRecord]) -> None:
        try:
            runner_for(index).process(records)
        except ShardFencedError:
            log.warning("shard %d is owned by another worker now; dropping it", index)
            ownership.fenced(index)
            _drop(runners, index)
        except Exception:
            # State may be half-applied in memory: rebuild it from the store and the ledger on
            # the next batch. The records of this batch are re-read through the gap reader.
            log.exception("shard %d: batch failed; the shard will recover and retry", index)
            _drop(runners, index)

    @app.agent(context.inbox, name="shard-scheduler")
    async def shard_scheduler(stream: Any) -> None:
        loop = asyncio.get_running_loop()
        sender = DurableSender(app.producer)
        async for events in take_ready(stream, batch_max, within_s):
            by_partition = await _by_partition(events, context, sender)
            assignment = _assigned(app, context.topics.shard_inbox)
            for index in sorted(by_partition):
                if not ownership.may_run(index, assignment, running=index in runners):
                    if index in runners:
                        await loop.run_in_executor(executor, _drop, runners, index)
                    continue
                records = sorted(by_partition[index], key=lambda r: r.offset)
                await loop.run_in_executor(executor, process, index, records)

    interval = float(os.environ.get("SLUICE_STANDBY_INTERVAL", "1.0"))
    if os.environ.get("SLUICE_STANDBY", "1") != "0" and interval > 0:

        @app.timer(interval=interval, name="shard-standby")  # type: ignore[untyped-decorator]
        async def standby_catch_up() -> None:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(executor, standbys.catch_up, runners)  # read there

    @app.on_partitions_assigned.connect  # type: ignore[arg-type]
    async def on_assigned(_app: Any, assigned: set[Any], **_: Any) -> None:
        ownership.assigned({tp.partition for tp in assigned
                            if tp.topic == context.topics.shard_inbox})

    @app.on_partitions_revoked.connect  # type: ignore[arg-type]
    async def on_revoked(_app: Any, revoked: set[Any], **_: Any) -> None:
        for tp in revoked:
            if tp.topic == context.topics.shard_inbox and tp.partition in runners:
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(executor, _drop, runners, tp.partition)


async def _by_partition(events: list[Any], context: WorkerContext,
                        sender: DurableSender) -> dict[int, list[InboxRecord]]:
    """A batch's events as inbox records by partition; an unreadable batch's marker is
    dead-lettered and stands for its offsets (they decide nothing)."""
    by_partition: dict[int, list[InboxRecord]] = defaultdict(list)
    for event in events:
        message = event.message
        letter = dead_letter_for(message.topic, context.topics.dead_letters, message)
        if letter is not None:
            await sender.deliver_until_done([letter])
            marker: UnreadableBatch = message.value
            by_partition[message.partition].append(
                InboxRecord(marker.first, 0, b"", last=marker.last))
            continue
        by_partition[message.partition].append(
            InboxRecord(message.offset, int(message.timestamp * 1000), message.value,
                        tuple(_headers(message.headers))))
    return by_partition


def _assigned(app: Any, topic: str) -> set[int] | None:
    """The inbox partitions the group assigns this worker now (None while it cannot say)."""
    try:
        return {tp.partition for tp in app.consumer.assignment() if tp.topic == topic}
    except Exception:  # not started, or between generations
        return None


def _record_owned(home: Path, runners: dict[int, ShardRunner]) -> None:
    """``worker/owned.json``: the shards this worker owns now (for operators and tests)."""
    path = Path(home) / "worker" / "owned.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "shards": sorted(runners)}))
    tmp.replace(path)


def _drop(runners: dict[int, ShardRunner], index: int) -> None:
    runner = runners.pop(index, None)
    if runner is not None:
        _record_owned(runner.settings.home, runners)
        try:
            runner.close()
        except Exception:
            log.exception("closing shard %d failed", index)


def _gap_reader(context: WorkerContext, index: int) -> Any:
    """Reads inbox records [first, end) of one partition directly, for gaps after a failure."""

    def read(first: int, end: int) -> Iterator[InboxRecord]:
        for record in read_range(context.settings.bootstrap, context.topics.shard_inbox, index,
                                 first, end, poll_s=5.0, max_failures=6):
            yield InboxRecord(record.offset, record.timestamp_ms, record.value or b"",
                              record.headers)

    return read


def _headers(headers: Any) -> list[tuple[str, bytes]]:
    """faust gives headers as a list of pairs or a mapping."""
    if not headers:
        return []
    items = headers.items() if isinstance(headers, dict) else headers
    return [(str(k), bytes(v or b"")) for k, v in items]
