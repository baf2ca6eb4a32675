"""A job that ends CANCELLED with no run: cancelled while pending, or while completing its
requeue (``scancel``), or by ``--kill-on-invalid-dep`` (``scheduler.schedule``'s pass)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler.records import JobEnded
from scheduler.shard.reasons import JobState

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scheduler.shard.model import Job

__all__ = ["cancelled_without_run"]


def cancelled_without_run(meta: Mapping[str, Any], job: Job, reason: str) -> JobEnded:
    """``job`` ends CANCELLED for ``reason`` with no run to end (``meta``: the fact's stamp)."""
    return JobEnded(
        **meta,
        job_sluid=job.job_sluid,
        job_id=job.job_id,
        run_sluid="",
        state=JobState.CANCELLED,
        reason=reason,
        job_state=JobState.CANCELLED,
    )
