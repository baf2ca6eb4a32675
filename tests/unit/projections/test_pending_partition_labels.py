"""A job of several partitions counts in each of them in the pending gauges, never under its
list (red team, 7 Dec 2026: ``sbatch -p p4,p3,p2,p1`` and every other order of equal-tier
partitions each made series of their own, ``partition="p4,p3,p2,p1"``: n partitions, up to
n! labels per order length, 109,600 for 8, from the submitter's choice of order alone)."""

from __future__ import annotations

from types import SimpleNamespace

from projections.metrics import _queue_families


def _pending(sluid: str, partition: str, submit_ms: int) -> dict[str, object]:
    return {"job_sluid": sluid, "state": "PENDING", "flags": [], "partition": partition,
            "reason": "BeginTime", "submit_ms": submit_ms}


def test_a_list_jobs_partitions_are_labels_each_and_its_order_is_none() -> None:
    jobs = {str(n): _pending(str(n), partition, 1_000 * n) for n, partition in enumerate(
        ["p1,p2,p3", "p3,p2,p1", "p2,p1", "p1", "p2, p2"], start=1)}
    reasons, age = _queue_families(SimpleNamespace(jobs=jobs), 100.0)  # type: ignore[arg-type]
    counts = {dict(labels)["partition"]: value for _s, labels, value in reasons.samples}
    assert counts == {"p1": 4, "p2": 4, "p3": 2}
    oldest = {dict(labels)["partition"]: value for _s, labels, value in age.samples}
    assert oldest == {"p1": 99.0, "p2": 99.0, "p3": 99.0}  # the first job waits in all three
