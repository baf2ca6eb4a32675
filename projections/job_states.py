"""How a job row's state is shown: Slurm's ``job_state_string`` and its compact form (squeue's ST).

A job row carries Slurm's *base* state (``state``: PENDING, RUNNING, COMPLETED, NODE_FAIL…) and
its state *flags* (``flags``: COMPLETING, EXPEDITING, SPECIAL_EXIT…). Slurm shows the first flag
in its display order, else the base state, so a job whose requeue waits for its epilogs
(PENDING + COMPLETING) shows ``COMPLETING``/``CG`` and a job requeued held by ``RequeueExitHold``
(PENDING + SPECIAL_EXIT) shows ``SPECIAL_EXIT``/``SE``. ``EX`` for EXPEDITING is Sluice's: Slurm's
compact form has no code for it (squeue shows such a job ``PD``).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FLAG_ORDER", "short_state", "shown_reason", "shown_state"]

FLAG_ORDER: tuple[str, ...] = (
    "COMPLETING", "STAGE_OUT", "CONFIGURING", "EXPEDITING", "RESIZING", "REQUEUED",
    "REQUEUE_FED", "REQUEUE_HOLD", "SPECIAL_EXIT", "STOPPED", "REVOKED", "RESV_DEL_HOLD",
    "SIGNALING",
)
"""Slurm's display precedence of the job state flags (``job_state_string``)."""

_SHORT = {
    "COMPLETING": "CG", "STAGE_OUT": "SO", "CONFIGURING": "CF", "EXPEDITING": "EX",
    "RESIZING": "RS", "REQUEUED": "RQ", "REQUEUE_FED": "RF", "REQUEUE_HOLD": "RH",
    "SPECIAL_EXIT": "SE", "STOPPED": "ST", "REVOKED": "RV", "RESV_DEL_HOLD": "RD",
    "SIGNALING": "SI",
    "PENDING": "PD", "RUNNING": "R", "SUSPENDED": "S", "COMPLETED": "CD", "CANCELLED": "CA",
    "FAILED": "F", "TIMEOUT": "TO", "NODE_FAIL": "NF", "PREEMPTED": "PR", "BOOT_FAIL": "BF",
    "DEADLINE": "DL", "OUT_OF_MEMORY": "OOM", "REJECTED": "RJ",
}


def shown_state(state: str, flags: Iterable[str] = ()) -> str:
    """What ``scontrol show job`` calls JobState: the first flag in display order, else
    the base state."""
    present = set(flags)
    return next((flag for flag in FLAG_ORDER if flag in present), state)


def short_state(state: str, flags: Iterable[str] = ()) -> str:
    """squeue's ST column (``job_state_string_compact``, with ``EX`` for EXPEDITING)."""
    shown = shown_state(state, flags)
    return _SHORT.get(shown, shown[:2])


_END_REASONS = {"TIMEOUT": "TimeLimit", "NODE_FAIL": "NodeDown", "BOOT_FAIL": "NodeDown",
                "OUT_OF_MEMORY": "OutOfMemory", "DEADLINE": "DeadLine",
                "COMPLETED": "None", "CANCELLED": "None", "PREEMPTED": "None"}
_LAUNCH_FAILURES = ("launch failed", "Launch refused", "StartTimedOut")
_PARTITION_GONE = " was removed from the configuration"
"""The end of the core's reason for a pending job a configuration failed by removing its
partition (``partition b was removed …``, scheduler/decide.py)."""


def shown_reason(state: str, reason: str, signal: int = 0) -> str:
    """scontrol's and squeue's Reason of a job: a pending or running job's own (Priority,
    Resources, JobHeldUser...); an ended job's is Slurm's word for how it ended
    (``job_state_reason.c``: TimeLimit, NodeDown, NonZeroExitCode, RaisedSignal,
    JobLaunchFailure, OutOfMemory, DeadLine), never the free text the row keeps (the kill's
    reason, a launch failure's sentence: ``sluice audit`` tells it), which broke scontrol's
    ``Key=Value`` words."""
    if state == "NODE_FAIL" and reason.startswith("partition ") and reason.endswith(
            _PARTITION_GONE):  # Slurm's FAIL_DOWN_PARTITION (_sync_jobs_to_conf)
        return "PartitionDown"
    if state == "CANCELLED" and reason == "DependencyNeverSatisfied":  # --kill-on-invalid-dep
        return reason  # Slurm's _kill_dependent keeps the job's reason, FAIL_DEPEND
    if state == "FAILED":
        if reason.startswith(_LAUNCH_FAILURES):
            return "JobLaunchFailure"
        return "RaisedSignal" if signal else "NonZeroExitCode"
    return _END_REASONS.get(state, reason or "None")
