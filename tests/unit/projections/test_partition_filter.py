"""squeue -p: a job pending in several partitions (``-p a,b``) is shown for any of them, as
squeue's own filter does (``_filter_job_part``)."""

from __future__ import annotations

from projections.http import _matches


def test_squeue_p_shows_a_job_pending_in_any_partition_of_its_list() -> None:
    row = {"partition": "b,a"}
    assert _matches(row, {"partition": ["a"]}, ("partition",))
    assert _matches(row, {"partition": ["c,b"]}, ("partition",))
    assert not _matches(row, {"partition": ["c"]}, ("partition",))
    assert _matches({"partition": "a"}, {"partition": ["a"]}, ("partition",))
