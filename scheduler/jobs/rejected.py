"""A refused request about a job: one ``JobRejected`` fact with Slurm's words for the refusal."""

from __future__ import annotations

from scheduler.records import Fact, JobRejected
from scheduler.shard.reasons import Rejection
from scheduler.shard.stamp import Stamper

__all__ = ["rejected"]


def rejected(st: Stamper, job_sluid: str, reason: Rejection, detail: str,
             nonce: int = 0) -> list[Fact]:
    """One ``JobRejected`` fact; its detail starts with Slurm's words for the refusal, if any
    (``Requested node configuration is not available: ...``), as sbatch would print them.
    ``nonce`` is the refused submission's (``SubmitJob.nonce``; 0 for other requests)."""
    return [
        JobRejected(
            **st.meta(),
            job_sluid=job_sluid,
            reason=reason.name,
            detail=f"{reason.slurm}: {detail}" if reason.slurm else detail,
            retryable=reason.retryable,
            nonce=nonce,
        )
    ]
