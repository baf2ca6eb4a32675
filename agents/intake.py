"""The intake agent: check, route into the shard inbox, or dead-letter; commit only when durable.

Requests arrive on ``sluice.requests`` keyed by their subject's SLUID, from any language. For
each batch from ``take_ready`` (agents.batching) the intake

1. classifies every record (:mod:`agents.intake_rules`): a request it forwards, or the named
   reason it is a dead letter: bytes that do not decode, a record that is not a request, one
   larger than ``SLUICE_MAX_REQUEST_BYTES``, a key that is not the subject's SLUID, a record on
   a partition its key does not hash to (murmur2), a submission without a working directory,
   or a batch the client could not read at all (:mod:`agents.fetch_guard`);
2. forwards each request **as the original bytes** to the partition of its shard (stamped with
   the intake's clock: the record time the core will decide it at; a client's clock is never
   trusted), and writes the dead letters. A submission refused for its key, partition or
   working directory is both: dead-lettered, and forwarded with the ``sluice-refused`` header,
   which the shard turns into a ``JobRejected`` with the same reason;
3. waits until the broker has confirmed every one of those records (:mod:`agents.forwarding`;
   the records of a batch are produced together with confluent-kafka and waited for once,
   :mod:`agents.batch_sender`);
   a forward that fails for good becomes a dead letter with the reason. Only then does the loop
   ask for the next batch, which is when faust acknowledges the events and may commit their
   offsets. If the body is interrupted (shutdown, a bug), the events of the batch are pinned
   (one extra reference), so faust never commits over a record that went nowhere; they are
   read again by the next owner.

faust acknowledges records it never delivered after a rebalance (docs/ARCHITECTURE.md,
"Records faust acknowledges without delivering"), so the intake keeps its own progress per
requests partition (:mod:`agents.intake_progress`): each batch is first completed by
:mod:`agents.intake_gaps` (records handled before are dropped, skipped offsets read directly),
a timer looks for records faust committed over with no batch after them, and the progress is
recorded once the batch is durable.

A Confluent-framed request (``00`` + schema id) has its schema id looked up in the schema
registry first (:mod:`agents.schema_ids`; a dead letter with a named reason when that fails),
and is forwarded re-encoded in single-object encoding, so the shards and every later reader of
the inbox never need the registry.

Validation that needs state (an unknown partition, an impossible node count) is the shard's: it
answers with a ``JobRejected`` fact carrying a named reason.

Credentials (``agents.auth.credentials``): the intake checks the request's ``sluice-auth``
header (munge or JWT) and seals the identity it proved, or the named reason it refused the
credential, into the forwarded record with the worker secret (``agents.auth.seal``); the shard
decides with that identity and turns a refusal into a ``RequestDenied`` fact. The intake's own
clock is sealed with it as the record's time (the ``sluice-refused`` mark rides beside the seal).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.auth.credentials import Verifier
from agents.auth.jwt_token import read_key
from agents.auth.seal import seal_headers, worker_secret
from agents.batch_sender import BatchedSender, intake_producer
from agents.batching import take_ready
from agents.fetch_guard import dead_letter_for
from agents.forwarding import DurableSender, Outgoing, dead_letter
from agents.gap_reader import GapRecord, read_range
from agents.intake_gaps import IntakeGaps
from agents.intake_progress import IntakeProgress, progress_group
from agents.intake_rules import REFUSED_HEADER, IntakeRules, Refusal
from agents.routing import ShardRouter
from agents.schema_ids import SchemaIds, confluent_id
from scheduler.records import REQUEST_NAMES
from schemas import encode
from schemas.codec import DEFAULT_CODEC
from streams.schema_registry import SchemaRegistry

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from agents.app import WorkerContext

__all__ = ["install_intake"]

log = logging.getLogger(__name__)


def install_intake(context: WorkerContext, batch_max: int, within_s: float) -> None:
    """Register the intake agent on the worker's app."""
    app = context.app
    settings, topics = context.settings, context.topics
    progress = IntakeProgress(settings.bootstrap, topics.requests,
                              progress_group(settings.prefix), app.conf.id)

    def read(partition: int, first: int, end: int) -> Iterator[GapRecord]:
        return read_range(settings.bootstrap, topics.requests, partition, first, end)

    gaps = IntakeGaps(progress, read, topics.requests, topics.dead_letters)
    sender = BatchedSender(lambda: intake_producer(settings.bootstrap))
    intake_batch = IntakeBatch(context, sender, gaps)

    @app.agent(context.requests, name="intake")
    async def intake(stream: Any) -> None:
        async for events in take_ready(stream, batch_max, within_s):
            try:
                await intake_batch.handle([event.message for event in events])
            except BaseException:
                for event in events:  # faust acks the batch on the way out: keep it unacked
                    event.message.incref()
                raise

    interval = float(os.environ.get("SLUICE_INTAKE_GAP_CHECK", "2.0"))
    if interval > 0:

        @app.timer(interval=interval, name="intake-gaps")  # type: ignore[untyped-decorator]
        async def look_for_gaps() -> None:
            try:
                assigned = app.consumer.assignment()
            except Exception:  # not started or rebalancing: look again next time
                return
            try:
                await intake_batch.catch_up({tp.partition for tp in assigned
                                             if tp.topic == topics.requests})
            except Exception as exc:  # the broker is away (an outage): look again next time
                log.warning("intake: could not look for skipped requests: %s", exc)

    def ours(partitions: set[Any]) -> set[int]:
        return {tp.partition for tp in partitions if tp.topic == topics.requests}

    async def revoked(_app: Any, partitions: set[Any], **_: Any) -> None:
        progress.forget(ours(partitions))

    async def assigned(_app: Any, partitions: set[Any], **_: Any) -> None:
        progress.forget(ours(partitions))  # another owner may have moved them on
        try:
            await asyncio.get_running_loop().run_in_executor(None, progress.load,
                                                             ours(partitions))
        except Exception:  # loaded again at the first batch or gap check
            log.exception("intake: could not load the progress of %s", ours(partitions))

    app.on_partitions_revoked.connect(revoked)  # type: ignore[arg-type]
    app.on_partitions_assigned.connect(assigned)  # type: ignore[arg-type]


class IntakeBatch:
    """Handles one batch of request events, durably (see the module docstring)."""

    def __init__(self, context: WorkerContext, sender: DurableSender,
                 gaps: IntakeGaps) -> None:
        self.context = context
        self.sender = sender
        self.gaps = gaps
        self.lock = asyncio.Lock()  # a batch and a catch-up never handle the same gap twice
        self.rules = IntakeRules(context.settings, REQUEST_NAMES)
        self.router = ShardRouter(context.settings)
        self.inbox = context.topics.shard_inbox
        self.dead_letters = context.topics.dead_letters
        self.secret = worker_secret(context.settings.home)
        self.verifier = make_verifier(context.settings.munge_socket, context.settings.jwt_key)
        self.schema_ids = make_schema_ids(context.settings.schema_registry_url,
                                          context.settings.schema_registry_wait_s)

    async def handle(self, batch: Sequence[Any]) -> None:
        """Forward or dead-letter every message (and any faust skipped before them); return
        once all of it is durable, then record the intake's progress."""
        async with self.lock:
            await self._forward(*await self.gaps.complete(batch))

    async def catch_up(self, partitions: set[int]) -> None:
        """Handle what faust committed over on ``partitions`` without delivering it."""
        async with self.lock:
            messages, letters, after = await self.gaps.overdue(partitions)
            if after:
                await self._forward(messages, letters, after)

    async def _forward(self, messages: Sequence[Any], letters: list[Outgoing],
                       after: dict[int, int]) -> None:
        forwards: list[tuple[Any, Outgoing]] = []
        unusable = await self.schema_ids.prepare(message.value for message in messages)
        for message in messages:
            marker = dead_letter_for(message.topic, self.dead_letters, message)
            if marker is not None:
                letters.append(marker)
                continue
            schema_id = confluent_id(message.value)
            if schema_id in unusable:
                letters.append(self._letter(message, unusable[schema_id]))
                continue
            try:
                planned, letter = self._plan(message)
            except Exception as exc:  # a bug this record triggers must not stop the intake
                log.exception("intake: %s[%d]@%d", message.topic, message.partition,
                              message.offset)
                planned, letter = [], self._letter(
                    message, f"InternalError: {type(exc).__name__}: {exc}")
            forwards.extend((message, item) for item in planned)
            if letter is not None:
                letters.append(letter)
        outcomes = await self.sender.deliver([item for _, item in forwards])
        for (message, item), why in zip(forwards, outcomes, strict=True):
            if why is not None:
                letters.append(self._letter(
                    message, f"ForwardFailed: could not write to {item.topic}[{item.partition}]: "
                             f"{why}"))
        await self.sender.deliver_until_done(letters)
        await self.gaps.done(after)

    def _plan(self, message: Any) -> tuple[list[Outgoing], Outgoing | None]:
        """The inbox records and the dead letter (if any) one request record leads to."""
        verdict = self.rules.classify(message)
        if isinstance(verdict, str):
            return [], self._letter(message, verdict)
        letter = None
        name, record = (verdict.name, verdict.record) if isinstance(verdict, Refusal) else verdict
        value = message.value
        if confluent_id(value) is not None:  # the inbox holds single-object encoding only
            value = encode(name, record)
        now_s = time.time()
        identity = self.verifier.identity(
            message.value, _headers(message.headers), now_s,
            f"{message.partition}:{message.offset}",
        )
        headers = tuple(seal_headers(self.secret, "intake", int(now_s * 1000), value, identity))
        if isinstance(verdict, Refusal):
            letter = self._letter(message, verdict.reason)
            headers += ((REFUSED_HEADER, verdict.reason.encode()),)
        planned = [
            Outgoing(self.inbox, self.context.settings.shard_name(shard).encode(), value,
                     shard, headers)
            for shard in self.router.shards_for(name, record)
        ]
        return planned, letter

    def _letter(self, message: Any, reason: str) -> Outgoing:
        log.warning("dead letter from %s[%d]@%d: %s", message.topic, message.partition,
                    message.offset, reason)
        return dead_letter(
            self.dead_letters, source_topic=message.topic, partition=message.partition,
            offset=message.offset, key=message.key, value=message.value or b"", error=reason,
        )


def make_verifier(munge_socket: str, jwt_key_path: str) -> Verifier:
    """The intake's credential checker; a JWT key that cannot be read is logged, not fatal."""
    key = None
    if jwt_key_path:
        try:
            key = read_key(Path(jwt_key_path))
        except (OSError, ValueError) as exc:
            log.error("JWT key %s unusable, JWT credentials will be refused: %s",
                      jwt_key_path, exc)
    return Verifier(munge_socket=munge_socket, jwt_key=key)


def make_schema_ids(url: str, wait_s: float) -> SchemaIds:
    """The intake's schema-id resolver; without ``url`` Confluent framing is dead-lettered."""
    return SchemaIds(DEFAULT_CODEC, SchemaRegistry(url) if url else None, wait_s)


def _headers(headers: Any) -> list[tuple[str, bytes]]:
    if not headers:
        return []
    items = headers.items() if isinstance(headers, dict) else headers
    return [(str(k), bytes(v or b"")) for k, v in items]
