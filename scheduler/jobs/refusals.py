"""Submissions the intake refused: the shard records the refusal as a ``JobRejected``.

The intake checks what only it can see (the record's Kafka key and partition) and what no job
may lack (an absolute working directory). It forwards a refused ``SubmitJob`` to the shard
marked with the reason (the shell turns the mark into a :class:`RefuseSubmission`), so the
refusal gets a place in the shard's gap-free sequence like every other decision. A refusal
about a job the shard already has decides nothing when it may be that job's own submission (the
same nonce, or none): the record was not that job's to refuse (a wrongly keyed copy, or a
forgery), and the intake has dead-lettered it with the reason anyway. A refused submission
whose nonce no job under the SLUID has is another client's that drew the same SLUID: it is
recorded, with its nonce, so that its client gets its answer (a ``JobRejected`` about a known
job changes no job: the views keep it as a denial). A refused ``TestSubmitJob`` (sbatch
--test-only) is answered with a ``JobTestAnswered`` carrying the reason, as the shard would have.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.jobs.decide import is_collision, is_known
from scheduler.jobs.rejected import rejected
from scheduler.records import Fact, JobTestAnswered
from scheduler.shard.reasons import Rejection, RejectionReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["INTAKE_REFUSALS", "RefuseSubmission", "decide_refusal"]

INTAKE_REFUSALS: dict[str, Rejection] = {
    r.name: r for r in (RejectionReason.KEY_MISMATCH, RejectionReason.PARTITION_MISMATCH,
                        RejectionReason.EMPTY_WORKING_DIRECTORY)
}
"""The reasons the intake may give, by wire name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RefuseSubmission:
    """A ``SubmitJob`` the intake refused, with its named reason and the detail."""

    job_sluid: str
    reason: str
    detail: str
    nonce: int = 0  # the refused submission's (SubmitJob.nonce)
    test: bool = False  # a TestSubmitJob's (sbatch --test-only): answered JobTestAnswered


def decide_refusal(state: ShardState, req: RefuseSubmission, st: Stamper) -> list[Fact]:
    """An unknown job, or another submission's nonce → ``JobRejected`` with the intake's
    reason; a known job's own submission (or one without a nonce) → nothing."""
    reason = INTAKE_REFUSALS.get(req.reason)
    if reason is None or not req.job_sluid:
        return []
    if req.test:
        text = f"{reason.slurm}: {req.detail}" if reason.slurm else req.detail
        return [JobTestAnswered(**st.meta(), job_sluid=req.job_sluid, nonce=req.nonce,
                                reason=reason.name, detail=text)]
    if is_known(state, req.job_sluid) and not is_collision(state, req.job_sluid, req.nonce):
        return []
    return rejected(st, req.job_sluid, reason, req.detail, req.nonce)
