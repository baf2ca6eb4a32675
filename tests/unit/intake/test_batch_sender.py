"""BatchedSender: a batch produced in order with confluent-kafka, each record's outcome awaited."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from agents.batch_sender import BatchedSender, produce_and_confirm
from agents.forwarding import Outgoing, PermanentSendError

Callback = Callable[[KafkaError | None, Any], None]


class FakeConfluentProducer:
    """confluent-kafka's ``Producer`` as the sender uses it: ``produce`` queues a record and
    its callback, ``flush`` answers every queued record (scripted per value), ``poll`` drains.

    ``script`` maps a value to the outcomes of its successive sends: None (confirmed), a
    ``KafkaError`` the delivery reports, or ``("raise", error)`` for ``produce`` itself.
    ``full`` is how many produce calls raise ``BufferError`` first (a full local queue).
    """

    def __init__(self, script: dict[bytes, list[Any]] | None = None, full: int = 0) -> None:
        self.script = script or {}
        self.full = full
        self.queued: list[tuple[bytes, Callback, KafkaError | None]] = []
        self.confirmed: list[bytes] = []
        self.produced: list[tuple[str, bytes, bytes | None, Any, dict[str, Any]]] = []
        self.polls = 0

    def produce(self, topic: str, value: bytes, key: bytes | None, *, headers: Any,
                on_delivery: Callback, **extra: Any) -> None:
        if self.full:
            self.full -= 1
            raise BufferError("Local: Queue full")
        planned = self.script.get(value)
        outcome = planned.pop(0) if planned else None
        if isinstance(outcome, tuple):
            raise KafkaException(outcome[1])
        self.produced.append((topic, value, key, headers, extra))
        self.queued.append((value, on_delivery, outcome))

    def poll(self, _timeout: float) -> int:
        self.polls += 1
        return self._answer()

    def flush(self, _timeout: float) -> int:
        self._answer()
        return 0

    def _answer(self) -> int:
        answered = len(self.queued)
        for value, callback, outcome in self.queued:
            callback(outcome, None)
            if outcome is None:
                self.confirmed.append(value)
        self.queued.clear()
        return answered


def item(value: bytes, partition: int | None = 0, headers: tuple[tuple[str, bytes], ...] = ()
         ) -> Outgoing:
    return Outgoing("t", b"k", value, partition, headers)


def test_every_record_is_produced_in_order_and_confirmed_in_one_wait() -> None:
    out = FakeConfluentProducer()
    outcomes = produce_and_confirm(out, [item(b"a"), item(b"b", None), item(b"c", 2)])
    assert outcomes == [None, None, None]
    assert [p[1] for p in out.produced] == [b"a", b"b", b"c"]
    assert [p[4] for p in out.produced] == [{"partition": 0}, {}, {"partition": 2}]


def test_headers_are_passed_as_a_list_and_none_when_there_are_none() -> None:
    out = FakeConfluentProducer()
    produce_and_confirm(out, [item(b"a", headers=(("h", b"v"),)), item(b"b")])
    assert [p[3] for p in out.produced] == [[("h", b"v")], None]


def test_a_full_local_queue_is_drained_and_the_record_produced_again() -> None:
    out = FakeConfluentProducer(full=2)
    assert produce_and_confirm(out, [item(b"a")]) == [None]
    assert out.polls == 2
    assert [p[1] for p in out.produced] == [b"a"]


def test_a_delivery_that_fails_says_whether_it_is_worth_a_retry() -> None:
    out = FakeConfluentProducer({b"big": [KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)],
                                 b"slow": [KafkaError(KafkaError._MSG_TIMED_OUT)]})
    big, slow, fine = produce_and_confirm(out, [item(b"big"), item(b"slow"), item(b"ok")])
    assert isinstance(big, PermanentSendError)
    assert isinstance(slow, KafkaException)
    assert fine is None


def test_a_record_refused_before_it_is_queued_gets_its_outcome_without_a_callback() -> None:
    out = FakeConfluentProducer({b"big": [("raise", KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))]})
    big, fine = produce_and_confirm(out, [item(b"big"), item(b"ok")])
    assert isinstance(big, PermanentSendError)
    assert fine is None


async def test_the_sender_retries_a_failure_that_clears_and_never_a_permanent_one() -> None:
    timeout = KafkaError(KafkaError._MSG_TIMED_OUT)
    out = FakeConfluentProducer({b"x": [timeout, timeout],
                                 b"big": [KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)]})
    outcomes = await BatchedSender(lambda: out, attempts=3, backoff_s=0).deliver(
        [item(b"x"), item(b"big")])
    assert outcomes[0] is None
    assert outcomes[1] is not None and "PermanentSendError" in outcomes[1]
    assert [p[1] for p in out.produced] == [b"x", b"big", b"x", b"x"]


async def test_a_producer_that_failed_for_good_is_replaced_and_the_record_delivered() -> None:
    fatal = KafkaError(KafkaError._FATAL, "fenced", fatal=True)
    broken = FakeConfluentProducer({b"x": [fatal]})
    fresh = FakeConfluentProducer()
    made = iter([broken, fresh])
    outcomes = await BatchedSender(lambda: next(made), attempts=2, backoff_s=0).deliver(
        [item(b"x")])
    assert outcomes == [None]
    assert fresh.confirmed == [b"x"]
