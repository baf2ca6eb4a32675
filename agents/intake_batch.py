"""One batch of requests through the intake: check, route into the shard inbox, or dead-letter.

For each batch the intake loop (``agents.intake_loop``) hands it, :class:`IntakeBatch`

1. completes it against the intake's progress (:mod:`agents.intake_gaps`): records handled
   before are dropped, offsets skipped before a record are read directly and handled first;
2. classifies every record (:mod:`agents.intake_rules`): a request it forwards, or the named
   reason it is a dead letter: bytes that do not decode, a record that is not a request, one
   larger than ``SLUICE_MAX_REQUEST_BYTES``, a key that is not the subject's SLUID, a record on
   a partition its key does not hash to (murmur2), a submission without a working directory,
   or a record the client could not read at all (a marker, :mod:`agents.intake_messages`);
3. forwards each request **as the original bytes** to the partition of its shard (stamped with
   the intake's clock: the record time the core will decide it at; a client's clock is never
   trusted), and writes the dead letters. A submission refused for its key, partition or
   working directory is both: dead-lettered, and forwarded with the ``sluice-refused`` header,
   which the shard turns into a ``JobRejected`` with the same reason;
4. waits until the broker has confirmed every one of those records (the records of a batch are
   produced together with confluent-kafka and waited for once, :mod:`agents.batch_sender`); a
   forward that fails for good becomes a dead letter with the reason. Only then is the
   intake's progress recorded (:mod:`agents.intake_progress`).

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

Rate limits (``agents.rate_limit``, Slurm's ``SlurmctldParameters=rl_enable``): a request of an
authenticated user whose bucket is empty at that record time is sealed with the identity
refused ``RateLimited``; the shard records it as a ``RequestDenied`` without deciding anything
else, so a flood costs the shard a refusal per request instead of a submission or a scheduling
pass. A refused request that would go to every shard (a ``PlanStarts``, a request by SLUID
alone) goes to the first of them only: one refusal answers its client.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.auth.credentials import Verifier
from agents.auth.jwt_token import read_key
from agents.auth.seal import seal_headers, worker_secret
from agents.fetch_guard import dead_letter_for
from agents.forwarding import DurableSender, Outgoing, dead_letter
from agents.intake_gaps import IntakeGaps
from agents.intake_rules import REFUSED_HEADER, IntakeRules, Refusal
from agents.metrics import INTAKE_REQUESTS, RATE_LIMITED_REQUESTS
from agents.rate_limit import RATE_LIMITED, RATE_LIMITED_DETAIL, RateLimiter, parse_rate_limits
from agents.routing import ShardRouter
from agents.schema_ids import SchemaIds, confluent_id
from scheduler.records import REQUEST_NAMES
from schemas import encode
from schemas.codec import DEFAULT_CODEC
from streams.schema_registry import SchemaRegistry
from streams.settings import Settings
from streams.topics import Topics

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["IntakeBatch", "make_schema_ids", "make_verifier"]

log = logging.getLogger(__name__)


class IntakeBatch:
    """Handles one batch of request events, durably (see the module docstring)."""

    def __init__(self, settings: Settings, sender: DurableSender, gaps: IntakeGaps) -> None:
        self.settings = settings
        self.sender = sender
        self.gaps = gaps
        self.rules = IntakeRules(settings, REQUEST_NAMES)
        self.router = ShardRouter(settings)
        topics = Topics(settings)
        self.inbox = topics.shard_inbox
        self.dead_letters = topics.dead_letters
        self.secret = worker_secret(settings.home)
        self.verifier = make_verifier(settings.munge_socket, settings.jwt_key)
        self.schema_ids = make_schema_ids(settings.schema_registry_url,
                                          settings.schema_registry_wait_s)
        self.limiter = RateLimiter(parse_rate_limits(settings.slurmctld_params))
        self._counted: dict[str, Any] = {}  # request kind → its INTAKE_REQUESTS child

    async def handle(self, batch: Sequence[Any]) -> None:
        """Forward or dead-letter every message (and any offsets skipped before them); return
        once all of it is durable, then record the intake's progress."""
        await self._forward(*await self.gaps.complete(batch))

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
        stamp_ms = int(now_s * 1000)
        identity = self.verifier.identity(
            message.value, _headers(message.headers), now_s,
            f"{message.partition}:{message.offset}",
        )
        shards = self.router.shards_for(name, record)
        counter = self._counted.get(name)
        if counter is None:
            counter = self._counted[name] = INTAKE_REQUESTS.labels(name)
        counter.inc()
        if not self.limiter.admit(identity, name, stamp_ms):
            identity = replace(identity, denied=RATE_LIMITED, detail=RATE_LIMITED_DETAIL)
            RATE_LIMITED_REQUESTS.labels(name).inc()
            shards = shards[:1]
        headers = tuple(seal_headers(self.secret, "intake", stamp_ms, value, identity))
        if isinstance(verdict, Refusal):
            letter = self._letter(message, verdict.reason)
            headers += ((REFUSED_HEADER, verdict.reason.encode()),)
        planned = [
            Outgoing(self.inbox, self.settings.shard_name(shard).encode(), value,
                     shard, headers)
            for shard in shards
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
