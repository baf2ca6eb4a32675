"""Submissions the intake refused: the shard records the refusal as a ``JobRejected``.

The intake checks what only it can see (the record's Kafka key and partition) and what no job
may lack (an absolute working directory). It forwards a refused ``SubmitJob`` to the shard
marked with the reason (the shell turns the mark into a :class:`RefuseSubmission`), so the
refusal gets a place in the shard's gap-free sequence like every other decision. A refusal
about a job the shard already has decides nothing: the record was not that job's to refuse (a
wrongly keyed copy, or a forgery), and the intake has dead-lettered it with the reason anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.jobs.decide import is_known, rejected
from scheduler.records import Fact
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


def decide_refusal(state: ShardState, req: RefuseSubmission, st: Stamper) -> list[Fact]:
    """An unknown job → ``JobRejected`` with the intake's reason; a known one → nothing."""
    reason = INTAKE_REFUSALS.get(req.reason)
    if reason is None or not req.job_sluid or is_known(state, req.job_sluid):
        return []
    return rejected(st, req.job_sluid, reason, req.detail)
