"""The shard scheduler agent: one owner per shard-inbox partition.

faust assigns each inbox partition to exactly one worker of the consumer group; this agent keeps
one :class:`~agents.shard_runner.ShardRunner` per partition it owns, hands it batches from
``take_events`` in offset order, and drops it when the partition is revoked. The runner's work
(the core, a Kafka transaction, a RocksDB batch) runs on one dedicated thread, so the event
loop keeps heartbeating while a large batch is decided.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from confluent_kafka import TopicPartition

from agents.metrics import observe_batch
from agents.shard_runner import InboxRecord, ShardFencedError, ShardRunner
from streams.clients import consumer

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agents.app import WorkerContext

__all__ = ["install_shard_agent"]

log = logging.getLogger(__name__)


def install_shard_agent(context: WorkerContext, batch_max: int, within_s: float) -> None:
    """Register the shard scheduler agent on the worker's app."""
    app = context.app
    runners: dict[int, ShardRunner] = {}
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="shard")

    def runner_for(index: int) -> ShardRunner:
        runner = runners.get(index)
        if runner is None:
            shard = context.settings.shard_name(index)
            runner = ShardRunner(context.settings, index, _gap_reader(context, index),
                                 on_batch=lambda stats: observe_batch(shard, stats))
            runners[index] = runner
        return runner

    def process(index: int, records: list[InboxRecord]) -> None:
        try:
            runner_for(index).process(records)
        except ShardFencedError:
            log.warning("shard %d is owned by another worker now; dropping it", index)
            _drop(runners, index)
        except Exception:
            # State may be half-applied in memory: rebuild it from the store and the ledger on
            # the next batch. The records of this batch are re-read through the gap reader.
            log.exception("shard %d: batch failed; the shard will recover and retry", index)
            _drop(runners, index)

    @app.agent(context.inbox, name="shard-scheduler")
    async def shard_scheduler(stream: Any) -> None:
        loop = asyncio.get_running_loop()
        async for events in stream.take_events(batch_max, within=within_s):
            by_partition: dict[int, list[InboxRecord]] = defaultdict(list)
            for event in events:
                message = event.message
                by_partition[message.partition].append(
                    InboxRecord(message.offset, int(message.timestamp * 1000), message.value)
                )
            for index in sorted(by_partition):
                records = sorted(by_partition[index], key=lambda r: r.offset)
                await loop.run_in_executor(executor, process, index, records)

    @app.on_partitions_revoked.connect  # type: ignore[arg-type]
    async def on_revoked(_app: Any, revoked: set[Any], **_: Any) -> None:
        for tp in revoked:
            if tp.topic == context.topics.shard_inbox and tp.partition in runners:
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(executor, _drop, runners, tp.partition)


def _drop(runners: dict[int, ShardRunner], index: int) -> None:
    runner = runners.pop(index, None)
    if runner is not None:
        try:
            runner.close()
        except Exception:
            log.exception("closing shard %d failed", index)


def _gap_reader(context: WorkerContext, index: int) -> Any:
    """Reads inbox records [first, end) of one partition directly, for gaps after a failure."""

    def read(first: int, end: int) -> Iterator[InboxRecord]:
        reader = consumer(
            context.settings.bootstrap,
            overrides={"isolation.level": "read_uncommitted", "enable.partition.eof": False},
        )
        try:
            reader.assign([TopicPartition(context.topics.shard_inbox, index, first)])
            offset = first
            while offset < end:
                message = reader.poll(5.0)
                if message is None:
                    raise TimeoutError(f"inbox partition {index}: offset {offset} not readable")
                at, value = message.offset(), message.value()
                if message.error() is not None or at is None or value is None:
                    continue
                offset = at + 1
                if at < end:
                    yield InboxRecord(at, message.timestamp()[1], value)
        finally:
            reader.close()

    return read
