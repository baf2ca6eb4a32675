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

    def cached(self, _partition: int) -> int | None:
        return None  # not loaded yet: the batch goes through complete_now

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


class LoadedProgress:
    """The progress group, loaded: offset 5 of partition 0 is cached."""

    def cached(self, partition: int) -> int | None:
        return 5 if partition == 0 else None

    def expected(self, partition: int) -> int:
        raise AssertionError(f"partition {partition}: no broker call for a cached progress")


async def test_a_batch_with_no_gap_and_a_cached_progress_is_completed_on_the_loop() -> None:
    gaps = IntakeGaps(LoadedProgress(), never_read, "requests", "dead")  # type: ignore[arg-type]
    out, letters, after = await gaps.complete([Message("requests", 0, 5),
                                               Message("requests", 0, 6)])
    assert ([m.offset for m in out], letters, after) == ([5, 6], [], {0: 7})


@pytest.mark.parametrize("offsets", [[7], [4, 5], [5, 7]])
def test_a_gap_or_a_redelivery_is_left_to_complete_now(offsets: list[int]) -> None:
    gaps = IntakeGaps(LoadedProgress(), never_read, "requests", "dead")  # type: ignore[arg-type]
    assert gaps.complete_cached([Message("requests", 0, o) for o in offsets]) is None
