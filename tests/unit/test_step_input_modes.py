"""A step's ``input`` read the same way by srun, the shard and the node (schemas/step_input.py)."""

from __future__ import annotations

import pytest

from agents.node.step_input import targets_of
from cli.step_stdin import input_mode
from scheduler.jobs.steps import valid_input
from schemas.step_input import input_task


@pytest.mark.parametrize(("value", "task"), [
    ("0", 0), ("17", 17), ("999999", 999999), ("1234567", None), ("-1", None), ("+1", None),
    ("1.0", None), ("", None), ("all", None), ("\u0661", None),  # Arabic-Indic one: not ASCII
])
def test_a_task_id_is_a_few_ascii_digits(value: str, task: int | None) -> None:
    assert input_task(value) == task


def test_srun_the_shard_and_the_node_agree_on_a_task_id() -> None:
    assert input_mode(False, "3", 4) == "3" and valid_input("3", 4)
    assert targets_of("3", range(2, 4)) == [3] and targets_of("3", range(2)) == []
    with pytest.raises(ValueError, match="below 4"):
        input_mode(False, "4", 4)
    assert not valid_input("4", 4) and not valid_input("\u0661", 4)
