"""Which refusal of a ``StartStep`` is this srun's (cli/run_step.py): a job's sruns each tell
their own by the step SLUID that ends the refusal's detail."""

from __future__ import annotations

from cli.run_step import _own_denial

MINE, OTHER = "s00DJXT1ZWS001", "s00DJXT1ZWS002"


def test_a_refusal_naming_this_sruns_step_is_its_own() -> None:
    assert _own_denial({"detail": f"n3 not allocated to job 4 (step {MINE})"}, MINE)


def test_another_sruns_refusal_is_not() -> None:
    assert not _own_denial({"detail": f"n3 not allocated to job 4 (step {OTHER})"}, MINE)


def test_a_refusal_from_a_shard_that_names_no_step_is_taken_as_before() -> None:
    assert _own_denial({"detail": "n3 not allocated to job 4"}, MINE)
