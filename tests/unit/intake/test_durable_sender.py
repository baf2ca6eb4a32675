"""DurableSender: confirmed, retried, or answered with why; dead letters always arrive."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka.errors import KafkaTimeoutError, MessageSizeTooLargeError
from faust.exceptions import ProducerSendError

from agents.forwarding import DurableSender, Outgoing


class FakeProducer:
    """faust's producer API: ``send`` buffers and returns a future the broker settles.

    ``script`` maps a value to the outcomes of its successive sends: None (confirmed), an
    exception raised by ``send`` itself ("raise"), or one the future fails with ("fail").
    """

    def __init__(self, script: dict[bytes, list[tuple[str, BaseException | None]]]) -> None:
        self.script = script
        self.confirmed: list[bytes] = []

    async def send(self, topic: str, key: bytes | None, value: bytes, partition: int | None,
                   timestamp: float | None, headers: Any) -> asyncio.Future[None]:
        planned = self.script.get(value)
        how, error = planned.pop(0) if planned else ("ok", None)
        if how == "raise" and error is not None:
            raise ProducerSendError(f"Error while sending: {error!r}") from error
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if how == "fail" and error is not None:
            future.set_exception(error)
        else:
            self.confirmed.append(value)
            future.set_result(None)
        return future


def item(value: bytes, fallback: Outgoing | None = None) -> Outgoing:
    return Outgoing("t", b"k", value, 0, fallback=fallback)


async def test_every_record_is_confirmed_in_order() -> None:
    producer = FakeProducer({})
    outcomes = await DurableSender(producer).deliver([item(b"a"), item(b"b"), item(b"c")])
    assert outcomes == [None, None, None]
    assert producer.confirmed == [b"a", b"b", b"c"]


async def test_a_record_too_large_is_not_retried_and_says_why() -> None:
    producer = FakeProducer({b"big": [("raise", MessageSizeTooLargeError("too big"))]})
    outcomes = await DurableSender(producer, backoff_s=0).deliver([item(b"big"), item(b"ok")])
    assert outcomes[0] is not None and outcomes[0].startswith("MessageSizeTooLargeError")
    assert outcomes[1] is None
    assert producer.confirmed == [b"ok"]


async def test_a_failure_that_clears_is_retried_until_confirmed() -> None:
    flaky: list[tuple[str, BaseException | None]] = [("fail", KafkaTimeoutError()),
                                                     ("fail", KafkaTimeoutError())]
    producer = FakeProducer({b"x": flaky})
    outcomes = await DurableSender(producer, attempts=3, backoff_s=0).deliver([item(b"x")])
    assert outcomes == [None]
    assert producer.confirmed == [b"x"]


async def test_a_failure_that_does_not_clear_gives_up_after_the_bounded_retries() -> None:
    always = [("fail", KafkaTimeoutError()) for _ in range(10)]
    producer = FakeProducer({b"x": list(always)})
    outcomes = await DurableSender(producer, attempts=3, backoff_s=0).deliver([item(b"x")])
    assert outcomes[0] is not None and "KafkaTimeoutError" in outcomes[0]
    assert len(producer.script[b"x"]) == 10 - 4  # the first send and three retries


async def test_a_dead_letter_the_broker_refuses_for_good_is_replaced_by_its_fallback() -> None:
    producer = FakeProducer({b"letter": [("fail", MessageSizeTooLargeError("too big"))]})
    fallback = item(b"small")
    await DurableSender(producer, backoff_s=0).deliver_until_done([item(b"letter", fallback)])
    assert producer.confirmed == [b"small"]


async def test_a_dead_letter_is_sent_again_until_the_broker_takes_it() -> None:
    producer = FakeProducer({b"letter": [("fail", KafkaTimeoutError()) for _ in range(9)]})
    await DurableSender(producer, attempts=1, backoff_s=0).deliver_until_done([item(b"letter")])
    assert producer.confirmed == [b"letter"]
