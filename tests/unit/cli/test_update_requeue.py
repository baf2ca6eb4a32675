"""``scontrol update JobId=N Requeue=0|1``: slurmctld's ``requeue`` (any positive number is 1)
as the spec's ``no``/``yes``; anything else is scontrol's ``Invalid Requeue value``."""

from __future__ import annotations

import pytest

from cli.job_control import update_changes


@pytest.mark.parametrize(("value", "want"), [("0", "no"), ("1", "yes"), ("2", "yes")])
def test_requeue_is_the_specs_yes_or_no(value: str, want: str) -> None:
    assert update_changes(["JobId=12", f"Requeue={value}"]) == ("12", {"requeue": want})


def test_a_requeue_that_is_no_number_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="Invalid Requeue value: x"):
        update_changes(["JobId=12", "Requeue=x"])
