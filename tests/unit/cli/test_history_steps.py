"""``sacct -j ID.STEP``: the step's line alone, as sacct prints it."""

from __future__ import annotations

from cli.history_cmd import only_steps, steps_named

ROWS = [{"job_id": "7"}, {"job_id": "7.batch"}, {"job_id": "7.0"}, {"job_id": "7.1"}]
NAMES = {"7", "s00AAAA"}


def _selectors(text: str) -> list[tuple[str, str, str]]:
    return [j.partition(".") for j in text.split(",")]


def test_a_step_selector_keeps_that_step_alone() -> None:
    steps = steps_named(_selectors("7.0"), NAMES)
    assert steps == {"0"}
    assert only_steps(ROWS, steps) == [{"job_id": "7.0"}]


def test_the_batch_step_and_several_steps() -> None:
    steps = steps_named(_selectors("7.batch,7.1"), NAMES)
    assert only_steps(ROWS, steps) == [{"job_id": "7.batch"}, {"job_id": "7.1"}]


def test_the_whole_job_wins_over_its_steps() -> None:
    assert steps_named(_selectors("7.0,7"), NAMES) is None
    assert only_steps(ROWS, None) == ROWS


def test_a_selector_of_another_job_does_not_narrow_this_one() -> None:
    assert steps_named(_selectors("8.0"), NAMES) is None
    assert steps_named(_selectors("s00AAAA.1"), NAMES) == {"1"}


def test_a_step_that_does_not_exist_gives_no_line() -> None:
    assert only_steps(ROWS, {"9"}) == []
