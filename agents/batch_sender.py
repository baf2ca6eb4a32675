"""The intake's durable sends in batches: one confluent-kafka producer, one wait per batch.

:class:`~agents.forwarding.DurableSender` sends through faust's aiokafka producer: one
``await send()`` per record and one future per record, on the event loop that also consumes
the requests (py-spy under ``benchmarks/bench_submit.py``: about 15 % of the worker's CPU was
aiokafka's send path and faust's producer buffer). :class:`BatchedSender` keeps the contract
(every record confirmed by the broker, ``acks=all``, before :meth:`deliver` returns; the same
retries, reasons and fallbacks) and changes only a round of sends:

1. every record of the round is handed to librdkafka with ``produce`` in batch order (the
   idempotent producer keeps the order within a partition, so the inbox keeps the request
   order); a full local queue is drained with ``poll`` and the produce repeated;
2. ``flush`` waits until librdkafka has the broker's answer for every record (its own
   retries included, bounded by ``message.timeout.ms``), each delivery callback recording the
   record's outcome;

both in a thread of the event loop's default executor, so the loop keeps consuming and
heartbeating while the broker answers (the intake thread's own event loop since the intake
reads with confluent-kafka, ``agents.intake_loop``). Records in a round are only this batch's:
the intake sends one batch at a time, and nothing else uses this producer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from agents.forwarding import (
    PRODUCER_MAX_REQUEST_BYTES,
    DurableSender,
    Outgoing,
    PermanentSendError,
)
from streams.clients import producer
from streams.kafka_native import KafkaError, KafkaException, Producer

__all__ = ["DELIVERY_TIMEOUT_MS", "BatchedSender", "intake_producer", "produce_and_confirm"]

log = logging.getLogger(__name__)

DELIVERY_TIMEOUT_MS = 30_000
"""How long librdkafka tries one record (``message.timeout.ms``) before it reports a failure:
about what aiokafka's request timeout gave the intake before."""

_PERMANENT_CODES = frozenset({
    KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_MSG_SIZE, KafkaError.RECORD_LIST_TOO_LARGE,
    KafkaError.INVALID_RECORD,
    # librdkafka's local codes are public constants whose names start with an underscore
    KafkaError._BAD_MSG, KafkaError._INVALID_ARG,
})


def intake_producer(bootstrap: str) -> Producer:
    """The intake's producer: idempotent, ``acks=all``, murmur2 (``streams.clients``), records
    up to the size faust's producer allowed, a bounded delivery time."""
    return producer(bootstrap, **{"message.max.bytes": PRODUCER_MAX_REQUEST_BYTES,
                                  "message.timeout.ms": DELIVERY_TIMEOUT_MS})


def _failure(error: KafkaError) -> BaseException:
    """The exception a failed record's outcome is: permanent or worth a retry."""
    if error.code() in _PERMANENT_CODES:
        return PermanentSendError(str(error))
    return KafkaException(error)


def produce_and_confirm(out: Any, items: Sequence[Outgoing],
                        flush_s: float = 1.0) -> list[BaseException | None]:
    """Produce every item in order, then wait until each has its outcome: ``None`` when the
    broker confirmed it, else the exception (:class:`PermanentSendError` for a record that
    can never be written). Blocks: run it in a thread."""
    outcomes: list[BaseException | None] = [None] * len(items)
    waiting: set[int] = set()

    def settle(index: int) -> Callable[[KafkaError | None, Any], None]:
        def delivered(error: KafkaError | None, _message: Any) -> None:
            waiting.discard(index)
            if error is not None:
                outcomes[index] = _failure(error)
        return delivered

    for index, item in enumerate(items):
        extra: dict[str, Any] = {} if item.partition is None else {"partition": item.partition}
        waiting.add(index)
        while True:
            try:
                out.produce(item.topic, item.value, item.key, headers=list(item.headers) or None,
                            on_delivery=settle(index), **extra)
            except BufferError:  # librdkafka's local queue is full: let it drain
                out.poll(0.05)
                continue
            except KafkaException as exc:  # refused before queueing (too large, bad partition)
                waiting.discard(index)
                outcomes[index] = _failure(exc.args[0])
            break
    while waiting:  # each record is answered within message.timeout.ms
        out.flush(flush_s)
    return outcomes


class BatchedSender(DurableSender):
    """A :class:`DurableSender` whose rounds are one confluent-kafka batch (module docstring).

    ``make`` builds the producer, again after a fatal error: an idempotent producer that
    reported one (a fenced or lost producer id) refuses everything after it, so retrying on
    it would never deliver (dead letters are retried without end).
    """

    def __init__(self, make: Callable[[], Any], attempts: int = 5,
                 backoff_s: float = 0.2) -> None:
        super().__init__(make(), attempts, backoff_s)
        self._make = make

    async def _send_round(self, items: Sequence[Outgoing]) -> list[BaseException | None]:
        if not items:
            return []
        loop = asyncio.get_running_loop()
        outcomes = await loop.run_in_executor(None, produce_and_confirm, self._producer, items)
        fatal = next((e for e in outcomes if _is_fatal(e)), None)
        if fatal is not None:
            log.error("intake producer failed for good (%s); a new one takes over", fatal)
            self._producer = self._make()
        return outcomes


def _is_fatal(outcome: BaseException | None) -> bool:
    if not isinstance(outcome, KafkaException) or not outcome.args:
        return False
    error = outcome.args[0]
    return isinstance(error, KafkaError) and bool(error.fatal())
