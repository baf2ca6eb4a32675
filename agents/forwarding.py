"""Durable sends for the intake: nothing is acknowledged before the broker has confirmed it.

The intake (``agents.intake_loop``) records a batch of ``sluice.requests`` as handled (its
progress, ``agents.intake_progress``) as soon as the batch's sends return. So
:meth:`DurableSender.deliver` returns only when every record of the batch is either in the
shard inbox or in the dead letters, **confirmed by the broker** (``acks=all``): each send is
waited for, not only buffered. In order:

1. every send is started in batch order (aiokafka keeps one batch in flight per partition, so
   the inbox keeps the request order);
2. every future is awaited; a send that failed is retried alone, up to ``attempts`` times with
   a doubling pause, unless the failure is the record's own (too large, corrupt: those never
   clear);
3. a send that still failed is answered with a dead letter saying why; a dead letter that is
   itself too large is replaced by a truncated one that keeps the position and the reason;
4. a dead letter that cannot be delivered (the broker is away) is retried until it is: giving
   up would let the offset be committed over a record that went nowhere.

:func:`dead_letter` builds the dead letter of a record (``streams.dead_letters`` encodes it,
truncated to fit) with its smaller fallback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka.errors import (
    CorruptRecordException,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
    RecordTooLargeError,
)

from streams.dead_letters import (
    DEAD_LETTER_MAX_BYTES,
    PRODUCER_MAX_REQUEST_BYTES,
    TRUNCATED_KEY_BYTES,
    dead_letter_value,
)

__all__ = [
    "DEAD_LETTER_MAX_BYTES",
    "PRODUCER_MAX_REQUEST_BYTES",
    "DurableSender",
    "Outgoing",
    "PermanentSendError",
    "dead_letter",
    "dead_letter_value",
    "record_size",
]

log = logging.getLogger(__name__)


class PermanentSendError(Exception):
    """A record the broker or the client refuses for good (too large, corrupt): never retried
    (what :class:`agents.batch_sender.BatchedSender` reports for librdkafka's codes)."""


_PERMANENT = (
    MessageSizeTooLargeError, RecordTooLargeError, RecordListTooLargeError, CorruptRecordException,
    PermanentSendError,
)


def record_size(key: bytes | None, value: bytes | None, headers: Sequence[Any] | None) -> int:
    """Bytes of a record's key, value and headers (what a size limit is measured on)."""
    size = len(key or b"") + len(value or b"")
    for header in headers or ():
        name, data = header
        size += len(name.encode() if isinstance(name, str) else name) + len(data or b"")
    return size


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One record to send: where, and what."""

    topic: str
    key: bytes | None
    value: bytes
    partition: int | None = None
    headers: tuple[tuple[str, bytes], ...] = ()
    fallback: Outgoing | None = None
    """What to send instead if the broker refuses this record for good (a smaller letter)."""


def dead_letter(
    dead_letters: str,
    *,
    source_topic: str,
    partition: int,
    offset: int,
    key: bytes | None,
    value: bytes,
    error: str,
) -> Outgoing:
    """The dead letter for a record, keyed by its key (truncated to 1 KiB), with a fallback.

    The fallback keeps only the position and the reason: it is what is sent if the broker
    refuses the letter itself (a topic configured with a smaller ``max.message.bytes``).
    """
    short_key = None if key is None else key[:TRUNCATED_KEY_BYTES]
    fallback = Outgoing(dead_letters, short_key, dead_letter_value(
        source_topic=source_topic, partition=partition, offset=offset, key=short_key,
        value=b"", error=f"{error[:1000]} [key and value dropped]"))
    full = dead_letter_value(source_topic=source_topic, partition=partition, offset=offset,
                             key=key, value=value, error=error)
    return Outgoing(dead_letters, short_key, full, fallback=fallback)


def _is_permanent(exc: BaseException) -> bool:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, _PERMANENT):
            return True
        cause = cause.__cause__
    return False


def _describe(exc: BaseException) -> str:
    cause = exc.__cause__ or exc
    return f"{type(cause).__name__}: {cause}"


class DurableSender:
    """Sends through faust's producer and waits for the broker's confirmation of each record."""

    def __init__(self, producer: Any, attempts: int = 5, backoff_s: float = 0.2) -> None:
        self._producer = producer
        self._attempts = attempts
        self._backoff_s = backoff_s

    async def deliver(self, items: Sequence[Outgoing]) -> list[str | None]:
        """Send every item; per item ``None`` (confirmed) or why it could not be delivered."""
        return [None if e is None else _describe(e) for e in await self._deliver(items)]

    async def deliver_until_done(self, items: Sequence[Outgoing]) -> None:
        """Send records that must arrive (dead letters): retry without end while they do not.

        A record the broker refuses for good is replaced by its ``fallback`` (if it has one).
        """
        waiting = list(items)
        pause = self._backoff_s
        while waiting:
            errors = await self._deliver(waiting)
            retry: list[Outgoing] = []
            for item, error in zip(waiting, errors, strict=True):
                if error is None:
                    continue
                log.error("could not write to %s (will retry in %.1f s): %s",
                          item.topic, pause, _describe(error))
                permanent = _is_permanent(error) and item.fallback is not None
                retry.append(item.fallback if permanent and item.fallback else item)
            waiting = retry
            if waiting:
                await asyncio.sleep(pause)
                pause = min(pause * 2, 10.0)

    async def _deliver(self, items: Sequence[Outgoing]) -> list[BaseException | None]:
        outcomes = await self._send_round(items)
        pause = self._backoff_s
        for attempt in range(1, self._attempts + 1):
            again = [i for i, error in enumerate(outcomes)
                     if error is not None and not _is_permanent(error)]
            if not again:
                break
            log.warning("%d sends failed (first: %s); attempt %d of %d in %.1f s", len(again),
                        _describe(outcomes[again[0]] or Exception()), attempt, self._attempts,
                        pause)
            await asyncio.sleep(pause)
            pause *= 2
            for index, error in zip(again, await self._send_round([items[i] for i in again]),
                                    strict=True):
                outcomes[index] = error
        return outcomes

    async def _send_round(self, items: Sequence[Outgoing]) -> list[BaseException | None]:
        """Start every send in order, then wait for each confirmation."""
        pending: list[Any] = []
        for item in items:
            try:
                pending.append(await self._producer.send(
                    item.topic, item.key, item.value, item.partition, None,
                    list(item.headers) or None,
                ))
            except Exception as exc:  # raised before buffering: too large, unknown partition
                pending.append(exc)
        return [started if isinstance(started, Exception) else await _settle(started)
                for started in pending]


async def _settle(future: Any) -> BaseException | None:
    try:
        await future
    except Exception as exc:
        return exc
    return None
