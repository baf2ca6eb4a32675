"""What the scheduling pass asks of the reservations (pure; ``now_ms`` is the pass's time).

- a job **without** ``--reservation`` may not start on a node of a reservation whose window
  meets ``[now, now + its time limit)`` (a job without a limit meets every later window), so
  it never runs into a window, backfill included (:func:`blocked_for`, :func:`nodes_mask`);
- a job **with** ``--reservation=NAME`` runs only inside the window, on its nodes: before the
  start it waits with ``Reservation``, once the reservation is gone with
  ``ReservationDeleted`` (:func:`reservation_wait`): held, as Slurm's ``RESV_DEL_HOLD``, until
  its user or an operator releases it, which takes the reservation off the job
  (``scheduler.jobs.decide.decide_release``: it may then run on any node);
- at the first pass at or after a reservation's end, its jobs' runs are killed as at a time
  limit (Slurm's ``ResvOverRun=0``) and it is gone: ``ReservationDeleted(ended)``
  (:func:`ended_reservations`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduler.records import Fact, ReservationDeleted, RunKillRequested
from scheduler.reservations.decide import jobs_in, jobs_let_go
from scheduler.shard.index import INFINITE, BoolArray, NodeIndex
from scheduler.shard.model import Hold, Job
from scheduler.shard.reasons import JobState, PendingReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["blocked_for", "ended_reservations", "hold_wait", "nodes_mask", "reservation_gone",
           "reservation_wait"]


def blocked_for(state: ShardState, job: Job, now_ms: int) -> tuple[str, ...]:
    """The reservations whose nodes ``job`` (of no reservation) may not start on now: those
    whose window meets its run from now to its time limit (sorted names)."""
    end = INFINITE if job.time_limit_s <= 0 else now_ms + job.time_limit_s * 1000
    return tuple(sorted(r.name for r in state.meta.reservations.values()
                        if r.overlaps(now_ms, end)))


def nodes_mask(state: ShardState, index: NodeIndex, names: Sequence[str]) -> BoolArray:
    """Per node slot: is it a node of one of the reservations ``names``?"""
    mask = np.zeros(len(index), dtype=np.bool_)
    pos = index.pos
    for name in names:
        reservation = state.meta.reservations.get(name)
        if reservation is not None:
            mask[[pos[n] for n in reservation.nodes if n in pos]] = True
    return mask


def reservation_gone(state: ShardState, job: Job, now_ms: int) -> bool:
    """Whether ``job`` names a reservation that no longer is: deleted, or past its end (gone
    from the state at the next pass: :func:`ended_reservations`)."""
    if not job.spec.reservation:
        return False
    reservation = state.meta.reservations.get(job.spec.reservation)
    return reservation is None or reservation.end_ms <= now_ms


def reservation_wait(state: ShardState, job: Job, now_ms: int) -> str:
    """Why a job of a reservation cannot start now for its reservation ("" = it may, inside
    the window on its nodes).

    ``ReservationDeleted`` is a hold (Slurm's ``RESV_DEL_HOLD``: ``_clear_job_resv`` gives the
    job priority 0): it outranks a user's hold, not an operator's (:func:`hold_wait`)."""
    if reservation_gone(state, job, now_ms):
        return PendingReason.RESERVATION_DELETED
    reservation = state.meta.reservations[job.spec.reservation]
    if reservation.start_ms > now_ms:
        return PendingReason.RESERVATION
    return ""


def hold_wait(job: Job, wait: str) -> str:
    """What the pass says of a held job of a reservation whose :func:`reservation_wait` is
    ``wait``: Slurm's order. An operator's hold stays ``JobHeldAdmin`` (``_clear_job_resv``
    holds only a job not held by an operator); a user's hold gives way to
    ``ReservationDeleted``; any hold outranks ``Reservation`` (the pass's hold reason, "")."""
    if not job.hold or (wait == PendingReason.RESERVATION_DELETED and job.hold != Hold.ADMIN):
        return wait
    return ""


def ended_reservations(state: ShardState, st: Stamper) -> list[Fact]:
    """The runs of reservations whose end came, killed (``TIMEOUT``), and the reservations
    gone (by end, then name)."""
    now = st.time_ms
    due = [r for r in state.meta.reservations.values() if r.end_ms <= now]
    facts: list[Fact] = []
    for reservation in sorted(due, key=lambda r: (r.end_ms, r.name)):
        for sluid in jobs_in(state, reservation.name):
            job = state.jobs[sluid]
            if not job.kill_reason:
                facts.append(RunKillRequested(
                    **st.meta(), job_sluid=sluid, run_sluid=job.run_sluid,
                    reason=JobState.TIMEOUT, nodes=job.nodes,
                ))
        facts.append(ReservationDeleted(**st.meta(), name=reservation.name, ended=True))
        facts += jobs_let_go(state, reservation, st)
    return facts
