"""IntakeGaps through a broker outage: a batch waits for the progress group, it never fails."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from agents import intake_gaps
from agents.intake_gaps import IntakeGaps


@dataclass
class Message:
    topic: str
    partition: int
    offset: int
    value: bytes = b"request"


class FlakyProgress:
    """The progress group: unreachable for ``failures`` reads, then at offset 5."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.reads = 0

    def expected(self, partition: int) -> int:
        self.reads += 1
        if self.reads <= self.failures:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT,
                                            "Failed to get committed offsets: Local: Timed out"))
        return 5


def never_read(*_: Any) -> Any:
    raise AssertionError("no gap here: nothing to read directly")


async def test_a_batch_waits_out_an_outage_of_the_progress_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(intake_gaps, "_MAX_PAUSE_S", 0.01)
    progress = FlakyProgress(failures=3)
    gaps = IntakeGaps(progress, never_read, "requests", "dead")  # type: ignore[arg-type]
    batch = [Message("requests", 0, 5), Message("requests", 0, 6)]
    out, letters, after = await gaps.complete(batch)
    assert [m.offset for m in out] == [5, 6]
    assert letters == []
    assert after == {0: 7}
    assert progress.reads == 4
