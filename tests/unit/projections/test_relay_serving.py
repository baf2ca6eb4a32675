"""The relay's producer thread: it serves a record's delivery report and sleeps while no
record is out (``RequestRelay._serve``), with a producer that stands in for confluent-kafka's."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from projections.api_auth import Viewer
from projections.relay import RequestRelay
from projections.service import ProjectionService
from schemas import encode
from streams.settings import Settings

SLUID = "s000000000000A"
VALUE = encode("CancelJob", {"job_sluid": SLUID})


class Message:
    def partition(self) -> int:
        return 3

    def offset(self) -> int:
        return 41


class Producer:
    """Holds each produced record's report until a ``poll`` serves it, as librdkafka does;
    ``len`` counts what is not served yet."""

    def __init__(self) -> None:
        self.waiting: list[Callable[[Any, Any], None]] = []
        self.lock = threading.Lock()
        self.waiting_polls = 0  # polls that could block: a sleeping thread makes none

    def list_topics(self, *_args: Any, **_kwargs: Any) -> None:
        return None

    def produce(self, _topic: str, _value: bytes, _key: bytes, headers: Any = None,
                on_delivery: Callable[[Any, Any], None] | None = None) -> None:
        assert on_delivery is not None
        with self.lock:
            self.waiting.append(on_delivery)

    def poll(self, timeout: float) -> int:
        with self.lock:
            served, self.waiting = self.waiting, []
            self.waiting_polls += timeout > 0
        for report in served:
            report(None, Message())
        return len(served)

    def __len__(self) -> int:
        with self.lock:
            return len(self.waiting)

    def flush(self, _timeout: float) -> int:
        return self.poll(0)


def test_a_record_is_answered_once_its_report_is_served_and_an_idle_thread_polls_nothing(
        tmp_path: Path) -> None:
    producer = Producer()
    relay = RequestRelay(ProjectionService(Settings(home=tmp_path)), Settings(home=tmp_path),
                         producer=producer)
    relay.start()
    try:
        for _ in range(3):
            code, answer = relay.handle({}, {"sluice-key": SLUID}, VALUE,
                                        Viewer("root", service=True))
            assert code == 200, answer
            assert answer == {"sent": {"partition": 3, "offset": 41}}
        assert len(producer) == 0
        assert producer.waiting_polls <= 3  # one at most a record: never while nothing is out
    finally:
        relay.stop()
    assert not relay._thread.is_alive()  # stop() wakes the sleeping thread
