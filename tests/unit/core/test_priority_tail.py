"""The main pass files the queue after the last partition to block at once (``_Pass.
_file_priority_tail``): the same reasons, waiting jobs and facts as walking it job by job."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.schedule import _Pass, schedule_with_plan
from tests.unit.core.test_properties import Driver, history_settings, node_shapes, steps


class TailDriver(Driver):
    """Each pass is decided twice, with and without the tail filed at once."""

    filed = 0

    def run_pass(self) -> None:
        job_by_job = _walk_job_by_job(lambda: schedule_with_plan(self.state, self.now))
        calls: list[int] = []
        original = _Pass._file_priority_tail

        def counted(run: _Pass, start: int, tail: list[Any]) -> int:
            calls.append(start)
            return original(run, start, tail)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_Pass, "_file_priority_tail", counted)
            result = schedule_with_plan(self.state, self.now)
        self.filed += len(calls)
        assert result.facts == job_by_job.facts
        assert (result.reservations, result.backfilled) == (
            job_by_job.reservations,
            job_by_job.backfilled,
        )
        self.passes.append((None, result))
        self.apply(result.facts)

    def step(self, step: tuple[Any, ...]) -> None:
        super().step(step)
        if step[0] == "submit":
            self.run_pass()


def _walk_job_by_job(run: Any) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_Pass, "_blocked_tail", lambda *_: [])
        return run()


@history_settings(150)
@given(node_shapes, st.sampled_from(("fcfs", "easy", "conservative")), steps)
def test_the_tail_filed_at_once_decides_as_the_walk(
    shapes: list[tuple[int, int]], policy: str, history: list[tuple[Any, ...]]
) -> None:
    TailDriver(shapes, policy).run(history)


def test_a_blocked_queue_files_its_tail_at_once() -> None:
    history: list[tuple[Any, ...]] = [
        ("submit", 2, 2, 0, 300, False, 0, ""),
        ("submit", 2, 2, 0, 300, False, 0, ""),
        ("submit", 2, 2, 0, 300, False, 0, ""),
        ("submit", 1, 1, 0, 300, False, 0, ""),
    ]
    driver = TailDriver([(1, 0), (1, 0)], "easy").run(history)
    assert driver.filed > 0
