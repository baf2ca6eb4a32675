"""Whether a run's end leads to a requeue: the core's rule, applied by the views to the facts.

A ``JobEnded`` ends a *run*. Whether the job ends with it or waits for its epilogs and is then
requeued is not a field of the fact: the core decides it with ``scheduler.requeue``'s
``end_requeue_reason`` from the job's requeue policy, the kill in force, the end state, the
exit code and the cluster's ``RequeueExit``/``RequeueExitHold``. Every one of those inputs is
in the ledger before the ``JobEnded`` (``JobQueued`` and the cluster's ``JobRequeue`` for the
policy, ``RunKillRequested`` for the kill, ``ConfigApplied`` for the lists), so the views apply
the same rule (:func:`requeue_after_end`) and never show a job as ended while its requeue is
pending. A unit test checks this copy against the core's function on every combination.

The rules are per shard: every shard records each configuration it applies, so a fact is always
judged by the configuration its own shard had when it decided it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EXPEDITE", "RequeueRules", "defers_release", "requeue_after_end"]

EXPEDITE = "expedite"
_ADMIN_KILLS = frozenset({"REQUEUED", "REQUEUE_HOLD"})
_FINAL_KILLS = frozenset({"CANCELLED", "TIMEOUT", "PREEMPTED"})


@dataclass(frozen=True, slots=True)
class RequeueRules:
    """What a cluster configuration says about requeues (defaults: Slurm's)."""

    job_requeue: bool = True
    """``JobRequeue``: the policy of a job that does not choose one (``yes`` when true)."""
    requeue_exit: frozenset[int] = frozenset()
    requeue_exit_hold: frozenset[int] = frozenset()


def requeue_after_end(
    policy: str, kill: str, end_state: str, exit_code: int, rules: RequeueRules
) -> str:
    """The ``JobRequeued`` reason a run's end leads to, or "" when the job ends for good.

    ``policy`` is the job's (``yes``, ``no``, ``expedite``), ``kill`` the reason of the last
    ``RunKillRequested`` of the run ("" if none; ``NODE_FAIL`` counts as none).
    """
    if kill in _ADMIN_KILLS:
        return "ADMIN"
    if kill == "PROLOG_FAILED":
        return "PROLOG_FAILED" if policy != "no" else ""
    if kill in _FINAL_KILLS:
        return ""
    if end_state == "NODE_FAIL":
        return "NODE_FAIL" if policy != "no" else ""
    if end_state == "FAILED" and policy == EXPEDITE and exit_code != 0:
        return "EXIT_NONZERO"
    if end_state in ("COMPLETED", "FAILED") and policy != "no":
        if exit_code in rules.requeue_exit:
            return "REQUEUE_EXIT"
        if exit_code in rules.requeue_exit_hold:
            return "SPECIAL_EXIT"
    return ""


def defers_release(policy: str, requeue_reason: str) -> bool:
    """Slurm's ``JOB_EXPEDITING`` while completing: the job keeps every node of the run until
    the last epilog (else each node is given back as its epilog completes)."""
    return policy == EXPEDITE and requeue_reason in ("NODE_FAIL", "EXIT_NONZERO")
